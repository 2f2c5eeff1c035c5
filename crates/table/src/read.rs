//! Table inputs: Parquet files and Arrow IPC files or streams, read batch
//! by batch (a Parquet file's pages as its row groups stream, never a
//! whole file).

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::basic::{Compression, Encoding};
use parquet::errors::ParquetError;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::reader::{ChunkReader, Length};
use parquet::schema::types::ColumnPath;

use crate::TableError;

/// A table file's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    /// Apache Parquet.
    Parquet,
    /// Arrow IPC: the file format (Feather v2) or the stream format.
    Arrow,
}

impl TableKind {
    /// The kind a file name's extension says: `.parquet`, `.pq`; `.arrow`,
    /// `.feather`, `.ipc`, `.arrows`.
    pub fn of_name(path: &Path) -> Option<TableKind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "parquet" | "pq" => Some(TableKind::Parquet),
            "arrow" | "feather" | "ipc" | "arrows" => Some(TableKind::Arrow),
            _ => None,
        }
    }

    /// `parquet` or `arrow`.
    pub fn name(self) -> &'static str {
        match self {
            TableKind::Parquet => "parquet",
            TableKind::Arrow => "arrow",
        }
    }
}

/// A table file opened once, read through its descriptor by every reader
/// of it (the footer, the width probe, the batches): each reads at its own
/// position (`pread`), so that readers share no file offset and the file is
/// never looked up by its name again.
#[derive(Clone)]
struct TableFile(Arc<File>);

impl TableFile {
    fn open(path: &Path) -> Result<TableFile, TableError> {
        Ok(TableFile(Arc::new(File::open(path).map_err(|e| io_error("open", path, e))?)))
    }

    /// A reader from byte `at` on.
    fn at(&self, at: u64) -> At {
        At { file: self.0.clone(), at }
    }
}

/// A reader of a [`TableFile`] at a position of its own.
struct At {
    file: Arc<File>,
    at: u64,
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl Seek for At {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let to = match pos {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.file.metadata()?.len().checked_add_signed(d),
            SeekFrom::Current(d) => self.at.checked_add_signed(d),
        };
        self.at = to.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek to a negative or overflowing position",
            )
        })?;
        Ok(self.at)
    }
}

impl Length for TableFile {
    fn len(&self) -> u64 {
        self.0.metadata().map(|m| m.len()).unwrap_or(0)
    }
}

impl ChunkReader for TableFile {
    type T = BufReader<At>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(BufReader::new(self.at(start)))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let mut buf = Vec::with_capacity(length);
        let read = self.at(start).take(length as u64).read_to_end(&mut buf)?;
        if read != length {
            return Err(ParquetError::EOF(format!(
                "expected to read {length} bytes at {start}, read only {read}"
            )));
        }
        Ok(buf.into())
    }
}

/// A table's batches as they are read.
pub type Batches = Box<dyn Iterator<Item = Result<RecordBatch, TableError>> + Send>;

/// One input table, opened ([`crate::open_tables`]): its schema and what
/// its metadata tells.
pub struct TableInput {
    pub(crate) path: PathBuf,
    pub(crate) kind: TableKind,
    file: TableFile,
    /// A Parquet file's footer, read once.
    parquet: Option<ArrowReaderMetadata>,
    pub(crate) schema: SchemaRef,
    /// Rows, when the metadata says.
    pub(crate) rows: Option<u64>,
    /// Uncompressed bytes of the data, when the metadata says.
    pub(crate) bytes: Option<u64>,
    /// A Parquet file's codec (its first column chunk's).
    pub(crate) codec: Option<Compression>,
    /// A Parquet file's rows per row group (its first group's).
    pub(crate) group_rows: Option<usize>,
    /// Whether each leaf column of a Parquet file is dictionary-encoded
    /// (in its first row group); empty for Arrow files.
    pub(crate) dictionary: Vec<(ColumnPath, bool)>,
    /// An Arrow IPC stream (not the file format).
    arrow_stream: bool,
}

/// Each column chunk of `group` and whether it is dictionary-encoded.
fn dictionary_columns(group: &RowGroupMetaData) -> Vec<(ColumnPath, bool)> {
    group
        .columns()
        .iter()
        .map(|c| {
            let dict = c.dictionary_page_offset().is_some()
                || c.encodings().any(|e| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY));
            (c.column_path().clone(), dict)
        })
        .collect()
}

fn bad(path: &Path, e: impl std::fmt::Display) -> TableError {
    TableError::Input { path: path.to_path_buf(), message: e.to_string() }
}

/// The I/O error of `path`, as GNU words it.
pub(crate) fn io_error(what: &'static str, path: &Path, e: std::io::Error) -> TableError {
    TableError::Io(emsort_io::Error::from_io(what, path, e))
}

impl TableInput {
    /// Opens `path` as a table of `kind`, reading its footer or schema.
    pub fn open(path: &Path, kind: TableKind) -> Result<TableInput, TableError> {
        let file = TableFile::open(path)?;
        match kind {
            TableKind::Parquet => {
                let meta =
                    ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| bad(path, e))?;
                let md = meta.metadata();
                let groups = md.row_groups();
                Ok(TableInput {
                    path: path.to_path_buf(),
                    kind,
                    schema: meta.schema().clone(),
                    rows: Some(md.file_metadata().num_rows().max(0) as u64),
                    bytes: Some(groups.iter().map(|g| g.total_byte_size().max(0) as u64).sum()),
                    codec: groups.first().filter(|g| g.num_columns() > 0).map(|g| g.column(0).compression()),
                    group_rows: groups.first().map(|g| g.num_rows().max(1) as usize),
                    dictionary: groups.first().map(dictionary_columns).unwrap_or_default(),
                    arrow_stream: false,
                    parquet: Some(meta),
                    file,
                })
            }
            TableKind::Arrow => {
                let mut magic = Vec::with_capacity(6);
                file.at(0).take(6).read_to_end(&mut magic).map_err(|e| io_error("read", path, e))?;
                let stream = magic != b"ARROW1";
                let schema = if stream {
                    arrow_ipc::reader::StreamReader::try_new(BufReader::new(file.at(0)), None)
                        .map_err(|e| bad(path, e))?
                        .schema()
                } else {
                    arrow_ipc::reader::FileReader::try_new(file.at(0), None)
                        .map_err(|e| bad(path, e))?
                        .schema()
                };
                Ok(TableInput {
                    path: path.to_path_buf(),
                    kind,
                    schema,
                    rows: None,
                    bytes: file.0.metadata().ok().map(|m| m.len()),
                    codec: None,
                    group_rows: None,
                    dictionary: Vec::new(),
                    arrow_stream: stream,
                    parquet: None,
                    file,
                })
            }
        }
    }

    /// A reader of the Parquet file's batches, from the footer read at open.
    fn parquet_reader(&self) -> Option<ParquetRecordBatchReaderBuilder<TableFile>> {
        let meta = self.parquet.clone()?;
        Some(ParquetRecordBatchReaderBuilder::new_with_metadata(self.file.clone(), meta))
    }

    /// Rows per batch for decoded batches of about `bytes`: the width the
    /// metadata gives (uncompressed bytes per row), or that of the first
    /// rows decoded when it is more than twice as wide (a dictionary-encoded
    /// column's values take their size only once decoded).
    pub(crate) fn batch_rows(&self, bytes: usize) -> Result<usize, TableError> {
        let meta = match (self.bytes, self.rows) {
            (Some(b), Some(r)) if r > 0 => (b / r).max(1) as usize,
            _ => 64,
        };
        let mut width = meta;
        if let Some(batch) = self.sample((bytes / meta / 8).clamp(1, 256))? {
            let decoded = batch.get_array_memory_size() / batch.num_rows().max(1);
            if decoded > 2 * meta {
                width = decoded;
            }
        }
        Ok((bytes / width).clamp(1, 64 << 10))
    }

    /// A Parquet table's first `rows` rows (of its first row group with
    /// any), decoded; `None` for an Arrow file or a table without rows.
    pub(crate) fn sample(&self, rows: usize) -> Result<Option<RecordBatch>, TableError> {
        let Some(b) = self.parquet_reader() else { return Ok(None) };
        let Some(g) = b.metadata().row_groups().iter().position(|g| g.num_rows() > 0) else {
            return Ok(None);
        };
        let mut r = b
            .with_row_groups(vec![g])
            .with_batch_size(rows.max(1))
            .with_limit(rows.max(1))
            .build()
            .map_err(|e| bad(&self.path, e))?;
        r.next().transpose().map_err(|e| bad(&self.path, e))
    }

    /// The table's batches of at most `batch_rows` rows (an Arrow IPC
    /// file's batches as they were written).
    pub fn batches(&self, batch_rows: usize) -> Result<Batches, TableError> {
        let path = self.path.clone();
        let err = move |e: arrow_schema::ArrowError| bad(&path, e);
        Ok(match (self.parquet_reader(), self.arrow_stream) {
            (Some(b), _) => Box::new(
                b.with_batch_size(batch_rows.max(1))
                    .build()
                    .map_err(|e| bad(&self.path, e))?
                    .map(move |b| b.map_err(&err)),
            ),
            (None, true) => Box::new(
                arrow_ipc::reader::StreamReader::try_new(BufReader::new(self.file.at(0)), None)
                    .map_err(|e| bad(&self.path, e))?
                    .map(move |b| b.map_err(&err)),
            ),
            (None, false) => Box::new(
                arrow_ipc::reader::FileReader::try_new(self.file.at(0), None)
                    .map_err(|e| bad(&self.path, e))?
                    .map(move |b| b.map_err(&err)),
            ),
        })
    }
}
