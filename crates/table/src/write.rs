//! Table outputs: a Parquet file whose footer says its sort order
//! (`sorting_columns`), or an Arrow IPC file, written batch by batch into
//! an open file (the caller's [`emsort_io::AtomicFile`]). A Parquet file's
//! column chunks are encoded in parallel on the sort's threads, into the
//! same bytes `parquet`'s `ArrowWriter` writes.

use std::io::{BufWriter, Write};
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

use emsort_io::WriteBack;

use crate::{TableError, TableKey, TableKind};

/// How the output table is laid out.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub kind: TableKind,
    /// Rows per Parquet row group (at most).
    pub group_rows: usize,
    /// Encoded bytes a Parquet row group may reach in memory before it is
    /// written (the memory bound).
    pub group_bytes: usize,
    pub codec: Compression,
    /// Leaf columns dictionary-encoded (true) or not, as the input's were;
    /// a column not listed: the writer's default (tried, given up on a
    /// dictionary larger than a page).
    pub dictionary: Vec<(ColumnPath, bool)>,
    /// Threads that encode a Parquet row group's column chunks.
    pub threads: usize,
}

/// A Parquet codec by name: `uncompressed`, `snappy`, `lz4`, `lz4_raw`,
/// `lzo`, `gzip`, `zstd`, `brotli`, the last three with an optional
/// `(LEVEL)` (default 6, 1, 1), in either case.
pub fn parse_codec(name: &str) -> Result<Compression, String> {
    let lower = name.trim().to_ascii_lowercase();
    let full = match lower.as_str() {
        "gzip" => "gzip(6)".to_string(),
        "zstd" | "brotli" => format!("{lower}(1)"),
        _ => lower,
    };
    full.parse().map_err(|e| {
        format!(
            "--parquet-compression {name}: {e} (uncompressed, snappy, lz4, lz4_raw, gzip[(LEVEL)], \
             zstd[(LEVEL)], brotli[(LEVEL)])"
        )
    })
}

/// The default Parquet codec for an output whose input says none (an
/// Arrow file): zstd level 1, as Polars writes.
pub(crate) fn default_codec() -> Compression {
    Compression::ZSTD(ZstdLevel::default())
}

pub(crate) enum TableWriter {
    Parquet(Box<ParquetWriter<BufWriter<WriteBack>>>),
    Arrow(Box<arrow_ipc::writer::FileWriter<BufWriter<WriteBack>>>),
}

fn bad(path: &Path, e: impl std::fmt::Display) -> TableError {
    TableError::Output { path: path.to_path_buf(), message: e.to_string() }
}

/// Parquet's index of the first leaf column of each top-level field.
fn leaf_index(schema: &SchemaRef, field: usize) -> usize {
    fn leaves(t: &DataType) -> usize {
        match t {
            DataType::Struct(fs) => fs.iter().map(|f| leaves(f.data_type())).sum::<usize>().max(1),
            DataType::List(f)
            | DataType::LargeList(f)
            | DataType::FixedSizeList(f, _)
            | DataType::ListView(f) => leaves(f.data_type()),
            DataType::LargeListView(f) => leaves(f.data_type()),
            DataType::Map(f, _) => leaves(f.data_type()),
            DataType::Dictionary(_, v) => leaves(v),
            DataType::RunEndEncoded(_, v) => leaves(v.data_type()),
            _ => 1,
        }
    }
    schema.fields().iter().take(field).map(|f| leaves(f.data_type())).sum()
}

/// The Parquet writer's properties for `layout`, its footer saying the
/// order of `keys` (at `key_fields` of `schema`).
fn parquet_properties(
    schema: &SchemaRef,
    layout: &Layout,
    keys: &[TableKey],
    key_fields: &[usize],
) -> WriterProperties {
    // A sorting column must be a leaf: keys on nested columns are not
    // recorded (and end the list, whose order is a prefix).
    let sorting = keys
        .iter()
        .zip(key_fields)
        .map_while(|(k, &f)| {
            let t = schema.field(f).data_type();
            let leaf = !t.is_nested() && !matches!(t, DataType::Dictionary(_, v) if v.is_nested());
            leaf.then(|| SortingColumn {
                column_idx: leaf_index(schema, f) as i32,
                descending: k.descending,
                nulls_first: k.nulls_first,
            })
        })
        .collect::<Vec<_>>();
    let mut props = WriterProperties::builder();
    for (column, on) in &layout.dictionary {
        props = props.set_column_dictionary_enabled(column.clone(), *on);
    }
    props
        .set_compression(layout.codec)
        .set_max_row_group_row_count(Some(layout.group_rows.max(1)))
        .set_max_row_group_bytes(Some(layout.group_bytes.max(1)))
        .set_sorting_columns((!sorting.is_empty()).then_some(sorting))
        .build()
}

impl TableWriter {
    /// A writer of `schema`'s rows sorted by `keys` (at `key_fields`) into
    /// `file` (named `path` in messages).
    pub fn new(
        file: WriteBack,
        path: &Path,
        schema: SchemaRef,
        layout: &Layout,
        keys: &[TableKey],
        key_fields: &[usize],
    ) -> Result<TableWriter, TableError> {
        let out = BufWriter::with_capacity(1 << 20, file);
        Ok(match layout.kind {
            TableKind::Parquet => {
                let props = parquet_properties(&schema, layout, keys, key_fields);
                let writer =
                    ParquetWriter::new(out, schema, props, layout.threads).map_err(|e| bad(path, e))?;
                TableWriter::Parquet(Box::new(writer))
            }
            TableKind::Arrow => TableWriter::Arrow(Box::new(
                arrow_ipc::writer::FileWriter::try_new(out, &schema).map_err(|e| bad(path, e))?,
            )),
        })
    }

    pub fn write(&mut self, batch: &RecordBatch, path: &Path) -> Result<(), TableError> {
        match self {
            TableWriter::Parquet(w) => w.write(batch).map_err(|e| bad(path, e)),
            TableWriter::Arrow(w) => w.write(batch).map_err(|e| bad(path, e)),
        }
    }

    /// Writes the footer and flushes; the file is then complete.
    pub fn finish(self, path: &Path) -> Result<(), TableError> {
        let out = match self {
            TableWriter::Parquet(w) => w.finish().map_err(|e| bad(path, e))?,
            TableWriter::Arrow(mut w) => {
                w.finish().map_err(|e| bad(path, e))?;
                w.into_inner().map_err(|e| bad(path, e))?
            }
        };
        out.into_inner().map_err(|e| crate::read::io_error("write", path, e.into_error()))?;
        Ok(())
    }
}

/// A Parquet file written row group by row group as `ArrowWriter` writes
/// it — a group ends at `group_rows` rows or once its encoded size reaches
/// `group_bytes`, a batch split where the size so far says it must be —
/// but with each batch's column chunks encoded (and each group's closed)
/// in parallel: encoding, mostly compression, is the output's work.
pub(crate) struct ParquetWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// The row group being encoded: a writer per leaf column, and its rows.
    group: Option<(Vec<ArrowColumnWriter>, usize)>,
    group_rows: usize,
    group_bytes: usize,
    /// `None`: one thread (the caller's).
    pool: Option<rayon::ThreadPool>,
}

impl<W: Write + Send> ParquetWriter<W> {
    /// A writer of `schema`'s rows into `out` with `props` (its row
    /// groups' bounds among them), encoding on `threads` threads.
    fn new(
        out: W,
        schema: SchemaRef,
        props: WriterProperties,
        threads: usize,
    ) -> parquet::errors::Result<Self> {
        let group_rows = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let group_bytes = props.max_row_group_bytes().unwrap_or(usize::MAX).max(1);
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props))?;
        let (file, factory) = writer.into_serialized_writer()?;
        let pool = (threads > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("emsort-encode{i}"))
                    .build()
            })
            .transpose()
            .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))?;
        Ok(ParquetWriter { file, factory, schema, group: None, group_rows, group_bytes, pool })
    }

    /// Runs `f` on every pair of `writers` and `items`, in parallel when
    /// there is a pool; the first error is returned.
    fn each<T: Sync>(
        &self,
        writers: &mut [ArrowColumnWriter],
        items: &[T],
        f: impl Fn(&mut ArrowColumnWriter, &T) -> parquet::errors::Result<()> + Sync,
    ) -> parquet::errors::Result<()> {
        use rayon::prelude::*;
        match &self.pool {
            Some(pool) => pool
                .install(|| writers.par_iter_mut().zip(items).with_max_len(1).try_for_each(|(w, x)| f(w, x))),
            None => writers.iter_mut().zip(items).try_for_each(|(w, x)| f(w, x)),
        }
    }

    fn write(&mut self, batch: &RecordBatch) -> parquet::errors::Result<()> {
        let mut remaining = batch.clone();
        while remaining.num_rows() > 0 {
            if self.group.is_none() {
                let index = self.file.flushed_row_groups().len();
                self.group = Some((self.factory.create_column_writers(index)?, 0));
            }
            let (writers, rows) = self.group.as_ref().expect("a group");
            let rows = *rows;
            let mut take = remaining.num_rows().min(self.group_rows - rows);
            let bytes: usize = writers.iter().map(ArrowColumnWriter::get_estimated_total_bytes).sum();
            // A group begun: as many rows as fit at its bytes per row so far.
            if let Some(per_row) = bytes.checked_div(rows) {
                if bytes >= self.group_bytes {
                    self.flush()?;
                    continue;
                }
                if let Some(fit) = (self.group_bytes - bytes).checked_div(per_row) {
                    if fit == 0 {
                        self.flush()?;
                        continue;
                    }
                    take = take.min(fit);
                }
            }
            let part = remaining.slice(0, take);
            remaining = remaining.slice(take, remaining.num_rows() - take);
            let mut leaves = Vec::new();
            for (field, column) in self.schema.fields().iter().zip(part.columns()) {
                leaves.extend(compute_leaves(field, column)?);
            }
            let (mut writers, rows) = self.group.take().expect("a group");
            let wrote = self.each(&mut writers, &leaves, |w, leaf| w.write(leaf));
            let rows = rows + take;
            self.group = Some((writers, rows));
            wrote?;
            // (A group its bytes fill is written before the next rows.)
            if rows >= self.group_rows {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Closes the row group being encoded (its column chunks in parallel)
    /// and appends it to the file.
    fn flush(&mut self) -> parquet::errors::Result<()> {
        let Some((writers, _)) = self.group.take() else {
            return Ok(());
        };
        use rayon::prelude::*;
        let chunks: Vec<ArrowColumnChunk> = match &self.pool {
            Some(pool) => pool.install(|| {
                writers
                    .into_par_iter()
                    .with_max_len(1)
                    .map(|w| w.close())
                    .collect::<parquet::errors::Result<_>>()
            }),
            None => writers.into_iter().map(|w| w.close()).collect(),
        }?;
        let mut group = self.file.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut group)?;
        }
        group.close()?;
        Ok(())
    }

    /// Writes the last row group and the footer; returns the output.
    fn finish(mut self) -> parquet::errors::Result<W> {
        self.flush()?;
        self.file.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{ListBuilder, StringBuilder, StringDictionaryBuilder};
    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StructArray};
    use arrow_schema::{Field, Fields};
    use std::sync::Arc;

    /// `n` rows of flat, nested (a list, a struct: several leaves) and
    /// dictionary columns, with nulls, from `seed`.
    fn batch(n: usize, seed: u64) -> RecordBatch {
        let mut x = seed | 1;
        let mut r = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let ints: Int64Array = (0..n).map(|i| (i % 7 != 0).then_some((r() % 1000) as i64)).collect();
        let floats: Float64Array = (0..n).map(|_| Some((r() % 10_000) as f64 / 7.0)).collect();
        let mut text = StringBuilder::new();
        let mut dict = StringDictionaryBuilder::<Int32Type>::new();
        let mut list = ListBuilder::new(arrow_array::builder::Int32Builder::new());
        for i in 0..n {
            match r() % 10 {
                0 => text.append_null(),
                k => text.append_value("xyz".repeat((k * (r() % 9)) as usize) + &i.to_string()),
            }
            dict.append_value(["red", "green", "blue"][(r() % 3) as usize]);
            for j in 0..r() % 4 {
                list.values().append_value(j as i32);
            }
            list.append(r() % 5 != 0);
        }
        let flags: BooleanArray = (0..n).map(|_| Some(r() % 2 == 0)).collect();
        let inner: ArrayRef = Arc::new(Int64Array::from((0..n as i64).collect::<Vec<_>>()));
        let pair = StructArray::new(
            Fields::from(vec![
                Field::new("a", DataType::Int64, false),
                Field::new("b", DataType::Boolean, true),
            ]),
            vec![inner, Arc::new(flags.clone())],
            None,
        );
        RecordBatch::try_from_iter_with_nullable(vec![
            ("int", Arc::new(ints) as ArrayRef, true),
            ("float", Arc::new(floats), false),
            ("text", Arc::new(text.finish()), true),
            ("color", Arc::new(dict.finish()), false),
            ("list", Arc::new(list.finish()), true),
            ("pair", Arc::new(pair), false),
            ("flag", Arc::new(flags), false),
        ])
        .unwrap()
    }

    /// The parallel writer writes the bytes `parquet`'s `ArrowWriter`
    /// writes, row groups split alike by rows and by bytes, on any number
    /// of threads.
    #[test]
    fn parquet_writer_writes_what_arrow_writer_writes() {
        let batches: Vec<RecordBatch> = [0usize, 1, 700, 3000, 5, 2500, 0, 4000]
            .iter()
            .enumerate()
            .map(|(i, &n)| batch(n, i as u64 + 9))
            .collect();
        let schema = batches[0].schema();
        for (group_rows, group_bytes) in
            [(1 << 20, 1 << 30), (1000, 1 << 30), (1 << 20, 40 << 10), (333, 9 << 10)]
        {
            let layout = Layout {
                kind: TableKind::Parquet,
                group_rows,
                group_bytes,
                codec: Compression::SNAPPY,
                dictionary: vec![(ColumnPath::from("text"), false)],
                threads: 1,
            };
            let props = parquet_properties(&schema, &layout, &[], &[]);
            let mut oracle = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props.clone())).unwrap();
            for b in &batches {
                oracle.write(b).unwrap();
            }
            let want = oracle.into_inner().unwrap();
            let groups = parquet::file::reader::SerializedFileReader::new(bytes::Bytes::from(want.clone()))
                .map(|r| parquet::file::reader::FileReader::metadata(&r).num_row_groups())
                .unwrap();
            for threads in [1, 2, 3] {
                let mut w = ParquetWriter::new(Vec::new(), schema.clone(), props.clone(), threads).unwrap();
                for b in &batches {
                    w.write(b).unwrap();
                }
                let got = w.finish().unwrap();
                assert!(
                    got == want,
                    "{group_rows} rows, {group_bytes} bytes, {threads} threads: {groups} groups"
                );
            }
        }
    }

    #[test]
    fn codecs_by_name() {
        assert_eq!(parse_codec("snappy").unwrap(), Compression::SNAPPY);
        assert_eq!(parse_codec("ZSTD").unwrap(), Compression::ZSTD(ZstdLevel::try_new(1).unwrap()));
        assert_eq!(parse_codec("zstd(9)").unwrap(), Compression::ZSTD(ZstdLevel::try_new(9).unwrap()));
        assert!(matches!(parse_codec("gzip").unwrap(), Compression::GZIP(_)));
        assert!(parse_codec("zip").unwrap_err().contains("zip"));
        assert!(parse_codec("zstd(99)").is_err());
    }
}
