//! Table outputs: a Parquet file whose footer says its sort order
//! (`sorting_columns`), or an Arrow IPC file, written batch by batch into
//! an open file (the caller's [`emsort_io::AtomicFile`]).

use std::io::BufWriter;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;
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
    Parquet(Box<ArrowWriter<BufWriter<WriteBack>>>),
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
                // A sorting column must be a leaf: keys on nested columns
                // are not recorded (and end the list, whose order is a
                // prefix).
                let sorting = keys
                    .iter()
                    .zip(key_fields)
                    .map_while(|(k, &f)| {
                        let t = schema.field(f).data_type();
                        let leaf =
                            !t.is_nested() && !matches!(t, DataType::Dictionary(_, v) if v.is_nested());
                        leaf.then(|| SortingColumn {
                            column_idx: leaf_index(&schema, f) as i32,
                            descending: k.descending,
                            nulls_first: k.nulls_first,
                        })
                    })
                    .collect::<Vec<_>>();
                let mut props = WriterProperties::builder();
                for (column, on) in &layout.dictionary {
                    props = props.set_column_dictionary_enabled(column.clone(), *on);
                }
                let props = props
                    .set_compression(layout.codec)
                    .set_max_row_group_row_count(Some(layout.group_rows.max(1)))
                    .set_max_row_group_bytes(Some(layout.group_bytes.max(1)))
                    .set_sorting_columns((!sorting.is_empty()).then_some(sorting))
                    .build();
                TableWriter::Parquet(Box::new(
                    ArrowWriter::try_new(out, schema, Some(props)).map_err(|e| bad(path, e))?,
                ))
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
            TableWriter::Parquet(w) => w.into_inner().map_err(|e| bad(path, e))?,
            TableWriter::Arrow(mut w) => {
                w.finish().map_err(|e| bad(path, e))?;
                w.into_inner().map_err(|e| bad(path, e))?
            }
        };
        out.into_inner().map_err(|e| crate::read::io_error("write", path, e.into_error()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
