//! Parquet and Arrow files sorted through runs on disk, against arrow-ord's
//! comparator (a stable sort of row numbers by `LexicographicalComparator`,
//! Arrow's own order, written apart from arrow-row's).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder, StringDictionaryBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_ord::sort::{LexicographicalComparator, SortColumn};
use arrow_schema::SortOptions;
use emsort_sort::{Format, SortPlan};
use emsort_table::{open_tables, rows_order, TableKey, TableKind, TableSort, TableStats};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// `n` rows of every kind of key column, with nulls and repeats, and a
/// list column carried along.
fn table(n: usize, seed: u64) -> RecordBatch {
    let mut next = xorshift(seed);
    let mut null = |p: u64| next() % 100 < p;
    let mut r = xorshift(seed ^ 0x5555);
    let ints: Int64Array =
        (0..n).map(|_| if null(10) { None } else { Some((r() % 50) as i64 - 25) }).collect();
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, 1.5, -2.25, 1e300, -1e-300];
    let floats: Float64Array = (0..n)
        .map(|_| if null(10) { None } else { Some(specials[(r() % specials.len() as u64) as usize]) })
        .collect();
    let words = ["", "a", "ab", "b", "Zed", "zed", "é", "ä", "a\nb", "longer text than sixteen bytes"];
    let strings: StringArray = (0..n)
        .map(|_| if null(10) { None } else { Some(words[(r() % words.len() as u64) as usize]) })
        .collect();
    let mut dict = StringDictionaryBuilder::<Int32Type>::new();
    for _ in 0..n {
        if null(5) {
            dict.append_null();
        } else {
            dict.append_value(["red", "green", "blue", "Blue"][(r() % 4) as usize]);
        }
    }
    let ts = TimestampMicrosecondArray::from(
        (0..n)
            .map(|_| if null(5) { None } else { Some((r() % 1000) as i64 * 1_000_000 - 500_000_000) })
            .collect::<Vec<_>>(),
    )
    .with_timezone("Europe/Paris");
    let dec = Decimal128Array::from(
        (0..n).map(|_| if null(5) { None } else { Some((r() % 2000) as i128 - 1000) }).collect::<Vec<_>>(),
    )
    .with_precision_and_scale(10, 2)
    .unwrap();
    let bools: BooleanArray =
        (0..n).map(|_| if null(10) { None } else { Some(r().is_multiple_of(2)) }).collect();
    let dates: Date32Array = (0..n).map(|_| Some((r() % 100) as i32 - 50)).collect();
    let mut list = ListBuilder::new(Int32Builder::new());
    for i in 0..n {
        if null(10) {
            list.append_null();
        } else {
            for j in 0..(r() % 4) {
                list.values().append_value((i as i32) * 4 + j as i32);
            }
            list.append(true);
        }
    }
    let id = Int64Array::from((0..n as i64).collect::<Vec<_>>());
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(id)),
        ("int", Arc::new(ints)),
        ("float", Arc::new(floats)),
        ("text", Arc::new(strings)),
        ("color", Arc::new(dict.finish())),
        ("ts", Arc::new(ts)),
        ("amount", Arc::new(dec)),
        ("flag", Arc::new(bools)),
        ("day", Arc::new(dates)),
        ("list", Arc::new(list.finish())),
    ];
    RecordBatch::try_from_iter(cols).unwrap()
}

fn write_parquet(batch: &RecordBatch, path: &Path, group_rows: usize) {
    let props = WriterProperties::builder().set_max_row_group_row_count(Some(group_rows)).build();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
    // Several batches too.
    let mut at = 0;
    while at < batch.num_rows() {
        let n = 777.min(batch.num_rows() - at);
        w.write(&batch.slice(at, n)).unwrap();
        at += n;
    }
    w.close().unwrap();
}

fn write_arrow_file(batch: &RecordBatch, path: &Path) {
    let mut w = arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(path).unwrap(), &batch.schema())
        .unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
}

fn write_arrow_stream(batch: &RecordBatch, path: &Path) {
    let mut w =
        arrow_ipc::writer::StreamWriter::try_new(std::fs::File::create(path).unwrap(), &batch.schema())
            .unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
}

fn read_parquet(path: &Path) -> (RecordBatch, parquet::file::metadata::ParquetMetaData) {
    let b = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap();
    let md = b.metadata().as_ref().clone();
    let schema = b.schema().clone();
    let batches: Vec<RecordBatch> = b.build().unwrap().map(|b| b.unwrap()).collect();
    (arrow_select::concat::concat_batches(&schema, &batches).unwrap(), md)
}

/// The oracle: `batch`'s rows stably sorted by `keys`, the first of each
/// group of equal keys only under `unique`.
fn oracle(batch: &RecordBatch, keys: &[TableKey], unique: bool) -> RecordBatch {
    let cols: Vec<SortColumn> = keys
        .iter()
        .map(|k| SortColumn {
            values: batch.column_by_name(&k.column).unwrap().clone(),
            options: Some(SortOptions { descending: k.descending, nulls_first: k.nulls_first }),
        })
        .collect();
    let cmp = LexicographicalComparator::try_new(&cols).unwrap();
    let mut idx: Vec<usize> = (0..batch.num_rows()).collect();
    idx.sort_by(|&a, &b| cmp.compare(a, b));
    if unique {
        idx.dedup_by(|b, a| cmp.compare(*a, *b).is_eq());
    }
    let take = arrow_array::UInt32Array::from(idx.iter().map(|&i| i as u32).collect::<Vec<_>>());
    arrow_select::take::take_record_batch(batch, &take).unwrap()
}

fn plan(dir: &Path, memory: u64, unique: bool) -> SortPlan {
    SortPlan::builder(Format::Lines)
        .memory(memory)
        .block_size(4096)
        .line_order(rows_order(unique))
        .temp_dir(dir)
        .threads(2)
        .build()
        .unwrap()
}

/// `emsort_table::sort_tables` of the tables at `inputs` (opened first).
fn sort_tables(
    plan: &SortPlan,
    inputs: &[PathBuf],
    out: &Path,
    spec: &TableSort,
    p: &dyn emsort_io::Progress,
    cancel: &AtomicBool,
) -> Result<TableStats, emsort_table::TableError> {
    emsort_table::sort_tables(plan, &open_tables(inputs)?, out, spec, p, cancel)
}

fn sort(inputs: &[&Path], out: &Path, spec: &TableSort, memory: u64, tmp: &Path) -> TableStats {
    let plan = plan(tmp, memory, spec.unique);
    let inputs: Vec<_> = inputs.iter().map(|p| p.to_path_buf()).collect();
    let stats =
        sort_tables(&plan, &inputs, out, spec, &emsort_io::NoProgress, &AtomicBool::new(false)).unwrap();
    assert_eq!(std::fs::read_dir(tmp).unwrap().count(), 0, "temporary files left");
    stats
}

/// Every key type, each direction and null placement, several keys, `-u`,
/// through several runs and merges at a tiny budget: the rows and their
/// order are arrow-ord's, and the footer says the order.
#[test]
fn parquet_sorts_as_arrow_orders() {
    let d = tempfile::tempdir().unwrap();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let batch = table(6000, 7);
    let input = d.path().join("in.parquet");
    write_parquet(&batch, &input, 1000);
    let k = |s: &str| TableKey::parse(s).unwrap();
    let cases: Vec<(Vec<TableKey>, bool)> = vec![
        (vec![k("int")], false),
        (vec![k("float:desc,nulls_first")], false),
        (vec![k("float")], false),
        (vec![k("text"), k("int:desc")], false),
        (vec![k("color:nulls_first"), k("ts:desc")], false),
        (vec![k("amount")], false),
        (vec![k("flag"), k("day:desc"), k("text")], true),
        (vec![k("ts")], true),
        (vec![k("list")], false),
    ];
    for (keys, unique) in cases {
        let out = d.path().join("out.parquet");
        let spec = TableSort { keys: keys.clone(), unique, ..TableSort::default() };
        let stats = sort(&[&input], &out, &spec, 192 << 10, &tmp);
        assert!(stats.sort.runs > 2, "{keys:?}: {} runs", stats.sort.runs);
        let (got, md) = read_parquet(&out);
        let want = oracle(&batch, &keys, unique);
        assert_eq!(got.schema(), batch.schema(), "{keys:?}");
        assert!(got == want, "{keys:?} -u {unique}: differs from arrow-ord's order");
        assert_eq!(stats.rows_out, want.num_rows() as u64);
        let g = &md.row_groups()[0];
        assert_eq!(g.num_rows(), 1000.min(want.num_rows() as i64), "row groups follow the input's");
        if keys[0].column == "list" {
            assert!(g.sorting_columns().is_none(), "a list is no sorting column");
            continue;
        }
        let sorting = g.sorting_columns().expect("sorting_columns in the footer");
        assert_eq!(sorting[0].descending, keys[0].descending);
        assert_eq!(sorting[0].nulls_first, keys[0].nulls_first);
        let first = batch.schema().index_of(&keys[0].column).unwrap();
        if first < 9 {
            assert_eq!(sorting[0].column_idx as usize, first);
        }
    }
}

/// Several inputs (Parquet and Arrow IPC, file and stream) sort as one,
/// into Arrow or Parquet; without keys every column orders (ORDER BY ALL);
/// an unknown column or a differing schema is refused, naming it, with
/// nothing written.
#[test]
fn several_inputs_and_kinds() {
    let d = tempfile::tempdir().unwrap();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (a, b) = (table(3000, 1), table(2000, 2));
    let pa = d.path().join("a.parquet");
    write_parquet(&a, &pa, 500);
    let pb = d.path().join("b.arrow");
    write_arrow_file(&b, &pb);
    let pc = d.path().join("c.arrows");
    write_arrow_stream(&b.slice(0, 100), &pc);
    let all = arrow_select::concat::concat_batches(&a.schema(), [&a, &b, &b.slice(0, 100)]).unwrap();
    let keys = vec![TableKey::parse("text").unwrap(), TableKey::parse("int:r").unwrap()];
    let out = d.path().join("out.arrow");
    let spec = TableSort { keys: keys.clone(), ..TableSort::default() };
    sort(&[&pa, &pb, &pc], &out, &spec, 256 << 10, &tmp);
    let r = arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&out).unwrap(), None).unwrap();
    let got: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
    let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
    // The dictionary column comes back as its values.
    let color = got.schema().index_of("color").unwrap();
    assert_eq!(got.schema().field(color).data_type(), &arrow_schema::DataType::Utf8);
    let want = oracle(&all, &keys, false);
    let mut cols = want.columns().to_vec();
    cols[color] = arrow_cast::cast(&cols[color], &arrow_schema::DataType::Utf8).unwrap();
    assert!(got.columns() == cols.as_slice(), "three inputs into an Arrow file");

    // ORDER BY ALL, but the list column is carried only (the id leads, so
    // it decides); -r reverses every key.
    let cols: Vec<TableKey> =
        a.schema().fields().iter().filter(|f| f.name() != "list").map(|f| TableKey::asc(f.name())).collect();
    let out = d.path().join("all.parquet");
    let spec = TableSort {
        keys: cols.clone(),
        reverse: true,
        output_kind: Some(TableKind::Parquet),
        ..TableSort::default()
    };
    sort(&[&pa], &out, &spec, 256 << 10, &tmp);
    let rev: Vec<TableKey> = cols.into_iter().map(|k| TableKey { descending: true, ..k }).collect();
    assert!(read_parquet(&out).0 == oracle(&a, &rev, false));

    let plan = plan(&tmp, 256 << 10, false);
    let no = AtomicBool::new(false);
    let p = &emsort_io::NoProgress;
    let spec = TableSort { keys: vec![TableKey::asc("nope")], ..TableSort::default() };
    let out = d.path().join("never.parquet");
    let e = sort_tables(&plan, std::slice::from_ref(&pa), &out, &spec, p, &no).unwrap_err();
    assert!(e.to_string().contains("nope") && e.to_string().contains("no such column"), "{e}");
    let other = d.path().join("other.parquet");
    write_parquet(
        &RecordBatch::try_from_iter([("id", Arc::new(Int64Array::from(vec![1i64])) as ArrayRef)]).unwrap(),
        &other,
        10,
    );
    let e =
        sort_tables(&plan, &[pa.clone(), other.clone()], &out, &TableSort::default(), p, &no).unwrap_err();
    assert!(e.to_string().contains("other.parquet") && e.to_string().contains("differ"), "{e}");
    let text = d.path().join("x.parquet");
    std::fs::write(&text, "not parquet\n").unwrap();
    let e = sort_tables(&plan, &[text], &out, &TableSort::default(), p, &no).unwrap_err();
    assert!(e.to_string().contains("x.parquet"), "{e}");
    assert!(!out.exists());
}

/// An input is read through the descriptor it was opened with: tables
/// replaced under their names after `open_tables` (another file renamed
/// over each: a Parquet file, an Arrow file, an Arrow stream) are still
/// sorted as they were opened.
#[test]
fn inputs_are_read_as_opened_not_by_name_again() {
    let d = tempfile::tempdir().unwrap();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (a, b) = (table(1500, 3), table(700, 4));
    let pa = d.path().join("a.parquet");
    write_parquet(&a, &pa, 400);
    let pb = d.path().join("b.arrow");
    write_arrow_file(&b, &pb);
    let pc = d.path().join("c.arrows");
    write_arrow_stream(&b.slice(100, 300), &pc);
    let inputs = [pa.clone(), pb.clone(), pc.clone()];
    let opened = open_tables(&inputs).unwrap();
    // Other rows of the same schema under the same names.
    let other = table(900, 99);
    for p in &inputs {
        let new = d.path().join("new");
        if p == &pa {
            write_parquet(&other, &new, 300);
        } else {
            write_arrow_file(&other, &new);
        }
        std::fs::rename(&new, p).unwrap();
    }
    let keys = vec![TableKey::parse("id").unwrap()];
    let spec = TableSort { keys: keys.clone(), ..TableSort::default() };
    let out = d.path().join("out.parquet");
    let plan = plan(&tmp, 256 << 10, false);
    emsort_table::sort_tables(&plan, &opened, &out, &spec, &emsort_io::NoProgress, &AtomicBool::new(false))
        .unwrap();
    let all = arrow_select::concat::concat_batches(&a.schema(), [&a, &b, &b.slice(100, 300)]).unwrap();
    let (got, _) = read_parquet(&out);
    let want = oracle(&all, &keys, false);
    let color = got.schema().index_of("color").unwrap();
    let mut cols = want.columns().to_vec();
    cols[color] = arrow_cast::cast(&cols[color], got.schema().field(color).data_type()).unwrap();
    assert!(got.columns() == cols.as_slice(), "the rows of the tables as opened");
}

/// The plan's input size for a table is its framed rows' size, which the
/// Parquet footer does not tell (`arrow-row` widens what Parquet narrows):
/// the estimate from framing the first rows is within 10 % of the bytes the
/// sort took in, where the footer's uncompressed size is not.
#[test]
fn row_bytes_estimates_the_framed_rows() {
    let d = tempfile::tempdir().unwrap();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let input = d.path().join("in.parquet");
    write_parquet(&table(20_000, 11), &input, 5000);
    let spec = TableSort { keys: vec![TableKey::parse("text").unwrap()], ..TableSort::default() };
    let tables = open_tables(std::slice::from_ref(&input)).unwrap();
    let estimate = emsort_table::row_bytes(&tables, &spec).unwrap() as f64;
    let stats = sort(&[&input], &d.path().join("out.parquet"), &spec, 1 << 20, &tmp);
    let framed = stats.sort.input_bytes as f64;
    assert!((estimate / framed - 1.0).abs() < 0.10, "estimate {estimate} for {framed} framed bytes");
    let footer = parquet_footer_bytes(&input) as f64;
    assert!((footer / framed - 1.0).abs() > 0.10, "the footer's {footer} already told {framed}");
}

/// The uncompressed size the footer of the Parquet file at `path` gives.
fn parquet_footer_bytes(path: &Path) -> u64 {
    let (_, md) = read_parquet(path);
    md.row_groups().iter().map(|g| g.total_byte_size() as u64).sum()
}
