//! The table sort: inputs read into framed rows, pushed into a
//! [`Sorter`], pulled back and written as a table (see the crate docs).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{Field, Schema, SchemaRef, SortOptions};
use emsort_io::{AtomicFile, ErrorKind, Progress};
use emsort_sort::keys::{LineOrder, OrderOptions};
use emsort_sort::{rows, SortPlan, SortStats, Sorter};
use parquet::basic::Compression;

use crate::payload::Payload;
use crate::read::{TableInput, TableKind};
use crate::write::{Layout, TableWriter};
use crate::{TableError, TableKey};

/// What to sort by and how to write the result.
#[derive(Debug, Clone, Default)]
pub struct TableSort {
    /// The keys in order; none: every column, ascending, nulls last
    /// (`ORDER BY ALL`).
    pub keys: Vec<TableKey>,
    /// `-u`: the first row of each group of equal keys only.
    pub unique: bool,
    /// `-r`: every key's direction reversed.
    pub reverse: bool,
    /// The output's kind; `None`: as its name says, else as the first
    /// input's.
    pub output_kind: Option<TableKind>,
    /// Rows per Parquet row group; `None`: the first input's (Parquet), else
    /// 1 Mi rows — at most as many as M/6 encoded bytes hold.
    pub group_rows: Option<usize>,
    /// The Parquet codec; `None`: the first input's, else zstd.
    pub codec: Option<Compression>,
}

/// What a table sort did.
#[derive(Debug, Clone)]
pub struct TableStats {
    /// The merge sort's statistics (of the framed rows).
    pub sort: SortStats,
    /// Rows read.
    pub rows_in: u64,
    /// Rows written.
    pub rows_out: u64,
}

/// The order a plan for tables needs: framed rows by their keys, the first
/// of equal keys only under `unique`.
pub fn rows_order(unique: bool) -> LineOrder {
    LineOrder::new(OrderOptions { rows: true, unique, ..OrderOptions::default() })
        .expect("the framed rows' order compiles")
}

/// The part of a budget of `memory` bytes the merge sort gets (the rest
/// holds the batches and the row group being written).
pub fn sort_share(memory: u64) -> u64 {
    memory / 3 * 2
}

/// Opens the tables `inputs` (Parquet or Arrow IPC, by their names),
/// reading each one's schema and footer once; an input that is not a table
/// is an error naming it.
pub fn open_tables(inputs: &[PathBuf]) -> Result<Vec<TableInput>, TableError> {
    inputs
        .iter()
        .map(|p| {
            let kind = TableKind::of_name(p).ok_or_else(|| TableError::Input {
                path: p.clone(),
                message: "not a table (.parquet, .arrow, .feather, .ipc, .arrows)".into(),
            })?;
            TableInput::open(p, kind)
        })
        .collect()
}

/// Rows of a Parquet table [`row_bytes`] frames to learn their width, at
/// most, and the bytes they may take decoded (wide rows: fewer of them).
const SAMPLE_ROWS: usize = 4096;
const SAMPLE_BYTES: usize = 1 << 20;

/// About how many bytes the framed rows of `tables` sorted by `spec` take, for
/// a plan's input size: a Parquet table's rows times the width of its first
/// rows framed as the sort frames them (up to 4096 of them, 1 MiB; the footer's
/// uncompressed size does not tell it, as `arrow-row` widens keys — 9 bytes for
/// an `i64`, strings in blocks of 8 and 32 bytes — and frames add 9 bytes a
/// row, while Parquet narrows values: the benchmark's 1 GiB table said 1.6 GB
/// and framed 3.5 GB (2.9 GB since the payload is compact), and the plan took
/// runs larger than the page cache's room for ones that fit in it). Where that
/// cannot be done, and for an Arrow file, its uncompressed size and 9 bytes a
/// row (an Arrow file's size). `None` if a table's size is not known.
pub fn row_bytes(tables: &[TableInput], spec: &TableSort) -> Option<u64> {
    let conv = common_schema(tables).ok().and_then(|s| Converters::new(&s, spec).ok());
    tables
        .iter()
        .map(|t| {
            let sampled = conv.as_ref().zip(t.rows).and_then(|(c, rows)| {
                let n = t.batch_rows(SAMPLE_BYTES).ok()?.min(SAMPLE_ROWS);
                let batch = t.sample(n).ok()??;
                let mut framed = Vec::new();
                c.frame(&batch, &mut framed, &t.path).ok()?;
                let width = framed.len() as f64 / batch.num_rows().max(1) as f64;
                Some((width * rows as f64).ceil() as u64)
            });
            sampled.or_else(|| Some(t.bytes? + 9 * t.rows.unwrap_or(0)))
        })
        .sum()
}

/// Bytes of the budget one batch of rows may take: M/24, at most 4 MiB
/// (under the binary's 8 MiB threshold, so that its buffers come from the
/// heap, and small enough that decoding and encoding overlap in pieces).
fn batch_bytes(memory: u64) -> usize {
    ((memory / 24) as usize).clamp(64 << 10, 4 << 20)
}

fn interrupted(path: &Path) -> TableError {
    TableError::Io(emsort_io::Error::new(ErrorKind::Interrupted, path))
}

/// The schema all `inputs` share (fields equal by name and type; a field
/// nullable in any is nullable), or which input differs.
fn common_schema(inputs: &[TableInput]) -> Result<SchemaRef, TableError> {
    let first = &inputs[0].schema;
    let mut fields: Vec<Field> = first.fields().iter().map(|f| f.as_ref().clone()).collect();
    for t in &inputs[1..] {
        let s = &t.schema;
        let same = s.fields().len() == fields.len()
            && s.fields()
                .iter()
                .zip(&fields)
                .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
        if !same {
            return Err(TableError::Input {
                path: t.path.clone(),
                message: format!(
                    "its columns differ from {}'s: {} against {}",
                    inputs[0].path.display(),
                    columns(s),
                    columns(first)
                ),
            });
        }
        for (f, g) in fields.iter_mut().zip(s.fields()) {
            if g.is_nullable() {
                *f = f.clone().with_nullable(true);
            }
        }
    }
    Ok(Arc::new(Schema::new_with_metadata(fields, first.metadata().clone())))
}

/// `schema` with each dictionary column as its values' type.
fn hydrated(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            arrow_schema::DataType::Dictionary(_, v) => f.as_ref().clone().with_data_type(v.as_ref().clone()),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `name: type, …` of a schema.
fn columns(s: &Schema) -> String {
    s.fields().iter().map(|f| format!("{}: {}", f.name(), f.data_type())).collect::<Vec<_>>().join(", ")
}

/// The fields the keys name, with each key as given or the whole row's.
fn resolve_keys(spec: &TableSort, schema: &Schema) -> Result<(Vec<TableKey>, Vec<usize>), TableError> {
    let keys: Vec<TableKey> = if spec.keys.is_empty() {
        schema.fields().iter().map(|f| TableKey::asc(f.name())).collect()
    } else {
        spec.keys.clone()
    };
    let mut fields = Vec::with_capacity(keys.len());
    for k in &keys {
        let Some(i) = schema.fields().iter().position(|f| f.name() == &k.column) else {
            return Err(TableError::Key(format!(
                "-k {}: no such column (the columns: {})",
                k.column,
                columns(schema)
            )));
        };
        fields.push(i);
    }
    let keys = keys.into_iter().map(|k| TableKey { descending: k.descending ^ spec.reverse, ..k }).collect();
    Ok((keys, fields))
}

/// The keys of a table's rows as bytes that compare as the rows order
/// (arrow-row's encoding of the key columns, each with its direction and
/// null placement): what the sort orders framed rows by, and what a range
/// partition of rows compares (`emsort.ray` cuts its key ranges with
/// them). The same keys over the same column types encode alike in every
/// process.
pub struct TableKeys {
    conv: RowConverter,
    keys: Vec<TableKey>,
    fields: Vec<usize>,
}

impl TableKeys {
    /// The keys `spec` names (its `reverse` applied; none: every column)
    /// over `schema`; an error names a missing column or one that cannot
    /// be ordered.
    pub fn new(schema: &Schema, spec: &TableSort) -> Result<TableKeys, TableError> {
        let (keys, fields) = resolve_keys(spec, schema)?;
        let sort_fields: Vec<SortField> = keys
            .iter()
            .zip(&fields)
            .map(|(k, &f)| {
                SortField::new_with_options(
                    schema.field(f).data_type().clone(),
                    SortOptions { descending: k.descending, nulls_first: k.nulls_first },
                )
            })
            .collect();
        for (k, s) in keys.iter().zip(&sort_fields) {
            if !RowConverter::supports_fields(std::slice::from_ref(s)) {
                return Err(TableError::Key(format!(
                    "-k {}: a column of type {} cannot be ordered",
                    k.column,
                    schema.field_with_name(&k.column).map(|f| f.data_type().to_string()).unwrap_or_default()
                )));
            }
        }
        let conv = RowConverter::new(sort_fields).map_err(|e| TableError::Key(e.to_string()))?;
        Ok(TableKeys { conv, keys, fields })
    }

    /// The keys of `batch`'s rows (`batch` of the schema given to
    /// [`TableKeys::new`]), one row each.
    pub fn encode(&self, batch: &RecordBatch) -> Result<Rows, arrow_schema::ArrowError> {
        self.conv.convert_columns(&self.fields.iter().map(|&i| batch.column(i).clone()).collect::<Vec<_>>())
    }

    /// The keys, each with its direction (`reverse` applied).
    pub fn keys(&self) -> &[TableKey] {
        &self.keys
    }

    /// The column of each key.
    pub fn fields(&self) -> &[usize] {
        &self.fields
    }
}

/// Rows whose payloads [`Converters::frame`] writes a column at a time
/// before the next rows (which stay in the cache meanwhile).
const FRAME_ROWS: usize = 128;

/// The keys' row converter (in their order) and the payload of the
/// other columns.
struct Converters {
    key: TableKeys,
    payload: Payload,
}

impl Converters {
    fn new(schema: &Schema, spec: &TableSort) -> Result<Converters, TableError> {
        let key = TableKeys::new(schema, spec)?;
        let key_fields = key.fields();
        let rest: Vec<usize> = (0..schema.fields().len()).filter(|i| !key_fields.contains(i)).collect();
        let payload = Payload::new(schema, &rest).map_err(TableError::Key)?;
        Ok(Converters { key, payload })
    }

    /// Appends `batch`'s rows to `out`, framed.
    fn frame(&self, batch: &RecordBatch, out: &mut Vec<u8>, path: &Path) -> Result<(), TableError> {
        let bad = |e: arrow_schema::ArrowError| TableError::Input {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let keys = self.key.encode(batch).map_err(bad)?;
        let rest = self.payload.encoding(batch).map_err(bad)?;
        // The rows' frames with room for their payloads, then the payloads
        // written into them a column at a time.
        let mut starts = vec![0; batch.num_rows()];
        rest.add_lens(&mut starts);
        rows::frame_blank(|i| keys.row(i).data(), &mut starts, out)
            .map_err(|m| TableError::Input { path: path.to_path_buf(), message: m })?;
        for (k, starts) in starts.chunks_mut(FRAME_ROWS).enumerate() {
            rest.write(out, starts, k * FRAME_ROWS);
        }
        Ok(())
    }

    /// The batch of `schema` that framed rows `rows` hold.
    fn batch(&self, schema: &SchemaRef, rows: &[&[u8]], out: &Path) -> Result<RecordBatch, TableError> {
        let bad = |e: arrow_schema::ArrowError| TableError::Output {
            path: out.to_path_buf(),
            message: e.to_string(),
        };
        let kp = self.key.conv.parser();
        let keys = self
            .key
            .conv
            .convert_rows(rows.iter().map(|r| kp.parse(emsort_sort::rows::key(r))))
            .map_err(bad)?;
        let payloads: Vec<&[u8]> = rows.iter().map(|r| emsort_sort::rows::payload(r)).collect();
        let rest = self.payload.decode(&payloads).map_err(bad)?;
        let mut cols: Vec<Option<ArrayRef>> = vec![None; schema.fields().len()];
        for (a, &f) in keys.into_iter().zip(self.key.fields()) {
            cols[f].get_or_insert(a);
        }
        for (f, a) in rest {
            cols[f] = Some(a);
        }
        let cols = cols
            .into_iter()
            .zip(schema.fields())
            .map(|(c, f)| {
                let c = c.expect("every column decoded");
                // arrow-row gives dictionaries back as their values.
                if c.data_type() == f.data_type() {
                    Ok(c)
                } else {
                    arrow_cast::cast(&c, f.data_type()).map_err(bad)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        RecordBatch::try_new(schema.clone(), cols).map_err(bad)
    }
}

/// Sorts the tables `inputs` ([`open_tables`]) by `spec` into the table
/// `output`, replaced atomically when complete. The
/// plan must order framed rows ([`rows_order`]); its memory should be
/// [`sort_share`] of the budget. Reports to `progress` (the sorter's
/// phases); `cancel` set stops it (an [`ErrorKind::Interrupted`] error;
/// nothing is written).
pub fn sort_tables(
    plan: &SortPlan,
    inputs: &[TableInput],
    output: &Path,
    spec: &TableSort,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<TableStats, TableError> {
    // The sorter runs on a thread of its own, with a flag and a progress
    // of its own: a relay passes the caller's flag to it and its reports
    // back, every 20 ms, while the sort runs.
    let shared = Arc::new(AtomicBool::new(false));
    let events = Arc::new(Events::default());
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| loop {
            let last = done.load(Ordering::Acquire);
            events.forward(progress);
            if cancel.load(Ordering::Relaxed) {
                shared.store(true, Ordering::Relaxed);
            }
            if last {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        });
        let r = sort_with(plan, inputs, output, spec, events.clone(), shared.clone());
        done.store(true, Ordering::Release);
        r
    })
}

/// A progress report kept for the relay.
enum Event {
    Phase(String, Option<u64>, bool),
    Advance(u64),
    Message(String),
    Finish,
}

/// Reports of the sorter's thread, kept until the relay forwards them.
#[derive(Default)]
struct Events(std::sync::Mutex<Vec<Event>>);

impl Events {
    fn push(&self, e: Event) {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // Consecutive advances add up.
        if let (Event::Advance(n), Some(Event::Advance(m))) = (&e, v.last_mut()) {
            *m += n;
            return;
        }
        v.push(e);
    }

    fn forward(&self, to: &dyn Progress) {
        let taken = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        for e in taken {
            match e {
                Event::Phase(name, total, true) => to.phase_bytes(&name, total),
                Event::Phase(name, total, false) => to.phase(&name, total),
                Event::Advance(n) => to.advance(n),
                Event::Message(m) => to.message(&m),
                Event::Finish => to.finish_phase(),
            }
        }
    }
}

impl Progress for Events {
    fn phase(&self, name: &str, total: Option<u64>) {
        self.push(Event::Phase(name.to_string(), total, false));
    }
    fn phase_bytes(&self, name: &str, total: Option<u64>) {
        self.push(Event::Phase(name.to_string(), total, true));
    }
    fn advance(&self, units: u64) {
        self.push(Event::Advance(units));
    }
    fn message(&self, msg: &str) {
        self.push(Event::Message(msg.to_string()));
    }
    fn finish_phase(&self) {
        self.push(Event::Finish);
    }
}

fn sort_with(
    plan: &SortPlan,
    tables: &[TableInput],
    output: &Path,
    spec: &TableSort,
    progress: Arc<dyn Progress>,
    cancel: Arc<AtomicBool>,
) -> Result<TableStats, TableError> {
    if tables.is_empty() {
        return Err(TableError::Key("no input table".into()));
    }
    let schema = common_schema(tables)?;
    let mut sorter = TableSorter::new(plan, schema.clone(), spec, progress, cancel.clone())?;
    for t in tables {
        let batches = t.batches(t.batch_rows(sorter.batch_bytes)?)?;
        read_ahead(batches, &t.path, |batch| sorter.push_from(&batch, &t.path))?;
    }
    let rows_in = sorter.rows_in;
    let first = &tables[0];
    let kind = spec.output_kind.or_else(|| TableKind::of_name(output)).unwrap_or(first.kind);
    let layout = Layout {
        kind,
        group_rows: spec.group_rows.or(first.group_rows).unwrap_or(1 << 20),
        group_bytes: ((sorter.memory / 6) as usize).max(1 << 20),
        codec: spec.codec.or(first.codec).unwrap_or_else(crate::write::default_codec),
        dictionary: first.dictionary.clone(),
        threads: plan.threads(),
    };
    let (keys, key_fields) = (sorter.conv.key.keys().to_vec(), sorter.conv.key.fields().to_vec());
    // An Arrow IPC file holds one dictionary per column for all its
    // batches; each sorted batch's would differ: such columns are written
    // as their values.
    let mut sorted = sorter.finish(kind == TableKind::Arrow)?;
    let target = AtomicFile::create(output)?;
    let file = target.writer()?;
    let writer = TableWriter::new(file, output, sorted.schema(), &layout, &keys, &key_fields)?;
    let batches = sorted.by_ref().map(|batch| {
        let batch = batch.map_err(|e| match e {
            TableError::Output { message, .. } => TableError::Output { path: output.to_path_buf(), message },
            e => e,
        })?;
        if cancel.load(Ordering::Relaxed) {
            return Err(interrupted(output));
        }
        Ok(batch)
    });
    write_behind(batches, writer, output)?;
    let stats = sorted.stats().cloned().ok_or_else(|| interrupted(output))?;
    target.commit()?;
    Ok(TableStats { sort: stats, rows_in, rows_out: sorted.rows_out })
}

/// Feeds `batches` (of the table `path`) to `each` in their order,
/// decoded on a thread of their own one batch ahead, so that decoding the
/// table and framing its rows use two cores; the first error (of either)
/// ends it.
fn read_ahead(
    batches: crate::read::Batches,
    path: &Path,
    mut each: impl FnMut(RecordBatch) -> Result<(), TableError>,
) -> Result<(), TableError> {
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let decoder = emsort_io::spawn_scoped(s, "emsort-decode", path, move || {
            for b in batches {
                let failed = b.is_err();
                if tx.send(b).is_err() || failed {
                    return;
                }
            }
        })?;
        let mut result = Ok(());
        for b in rx.iter() {
            if let Err(e) = b.and_then(&mut each) {
                result = Err(e);
                break;
            }
        }
        // A decoder blocked on a full channel ends when the channel does.
        drop(rx);
        decoder.join().map_err(|_| TableError::Input {
            path: path.to_path_buf(),
            message: "the decoding thread panicked".into(),
        })?;
        result
    })
}

/// Writes `batches` through `writer` into `path` on a thread of its own,
/// one batch behind, so that decoding sorted rows and encoding the table
/// use two cores; the file is complete (footer written, flushed) when it
/// returns `Ok`.
fn write_behind(
    batches: impl Iterator<Item = Result<RecordBatch, TableError>>,
    mut writer: TableWriter,
    path: &Path,
) -> Result<(), TableError> {
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<RecordBatch>(1);
        let encoder = emsort_io::spawn_scoped(s, "emsort-encode", path, move || {
            for b in rx {
                writer.write(&b, path)?;
            }
            Ok::<_, TableError>(writer)
        })?;
        let mut result = Ok(());
        for b in batches {
            match b {
                // A closed channel: the encoder failed, and says why below.
                Ok(b) => {
                    if tx.send(b).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        drop(tx);
        let writer = encoder.join().map_err(|_| TableError::Output {
            path: path.to_path_buf(),
            message: "the encoding thread panicked".into(),
        })??;
        result?;
        writer.finish(path)
    })
}

/// Bytes of framed rows handed to the sorter at a time (at least).
const STAGE: usize = 1 << 20;

/// The name batches pushed without a file are reported under.
const STREAM: &str = "<arrow stream>";

/// A table sort fed batch by batch: [`TableSorter::push`] each batch of one
/// schema, then [`TableSorter::finish`] and pull the sorted batches.
pub struct TableSorter {
    conv: Converters,
    schema: SchemaRef,
    sorter: Sorter,
    stage: Vec<u8>,
    /// Rows pushed.
    rows_in: u64,
    /// The whole budget (the plan's memory is the sort's share).
    memory: u64,
    /// Bytes of rows a batch in or out holds.
    batch_bytes: usize,
    cancel: Arc<AtomicBool>,
}

impl TableSorter {
    /// A sorter of batches of `schema` by `spec`'s keys (its output
    /// options do not apply) with `plan` (framed rows, [`rows_order`]),
    /// reporting to `progress`, stopped by `cancel`.
    pub fn new(
        plan: &SortPlan,
        schema: SchemaRef,
        spec: &TableSort,
        progress: Arc<dyn Progress>,
        cancel: Arc<AtomicBool>,
    ) -> Result<TableSorter, TableError> {
        if !plan.line_order().is_some_and(LineOrder::rows) {
            return Err(emsort_sort::SortError::BadPlan(
                "a table sort's plan orders framed rows (rows_order)".into(),
            )
            .into());
        }
        let conv = Converters::new(&schema, spec)?;
        let memory = plan.memory() * 3 / 2;
        Ok(TableSorter {
            conv,
            schema,
            sorter: Sorter::with_progress(plan.clone(), progress, cancel.clone())?,
            stage: Vec::with_capacity(STAGE + STAGE / 2),
            rows_in: 0,
            memory,
            batch_bytes: batch_bytes(memory),
            cancel,
        })
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Adds a batch's rows (of the sorter's schema).
    pub fn push(&mut self, batch: &RecordBatch) -> Result<(), TableError> {
        self.push_from(batch, Path::new(STREAM))
    }

    fn push_from(&mut self, batch: &RecordBatch, path: &Path) -> Result<(), TableError> {
        if batch.schema().fields() != self.schema.fields() {
            let same = batch.num_columns() == self.schema.fields().len()
                && batch
                    .schema()
                    .fields()
                    .iter()
                    .zip(self.schema.fields())
                    .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
            if !same {
                return Err(TableError::Input {
                    path: path.to_path_buf(),
                    message: format!(
                        "a batch's columns differ from the first's: {} against {}",
                        columns(&batch.schema()),
                        columns(&self.schema)
                    ),
                });
            }
        }
        // Wide batches are framed in pieces of about `batch_bytes`.
        let width = batch.get_array_memory_size() / batch.num_rows().max(1) + 1;
        let step = (self.batch_bytes / width).clamp(1, 64 << 10);
        let mut at = 0;
        while at < batch.num_rows() {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(interrupted(path));
            }
            let piece = batch.slice(at, step.min(batch.num_rows() - at));
            at += piece.num_rows();
            self.rows_in += piece.num_rows() as u64;
            self.conv.frame(&piece, &mut self.stage, path)?;
            if self.stage.len() >= STAGE {
                let full = std::mem::replace(&mut self.stage, Vec::with_capacity(STAGE + STAGE / 2));
                self.sorter.push_vec(full)?;
            }
        }
        Ok(())
    }

    /// Ends the input; the sorted batches follow, each of about M/24 bytes
    /// of rows (`hydrate`: dictionary columns as their values).
    pub fn finish(mut self, hydrate: bool) -> Result<SortedBatches, TableError> {
        self.sorter.push_vec(std::mem::take(&mut self.stage))?;
        let sorted = self.sorter.finish()?;
        let schema = if hydrate { hydrated(&self.schema) } else { self.schema.clone() };
        Ok(SortedBatches {
            blocks: sorted.blocks(),
            conv: self.conv,
            schema,
            batch_bytes: self.batch_bytes,
            rows_out: 0,
            cancel: self.cancel,
        })
    }
}

/// The sorted batches of a [`TableSorter`], decoded as the last merge
/// makes their rows.
pub struct SortedBatches {
    blocks: emsort_sort::Blocks,
    conv: Converters,
    schema: SchemaRef,
    batch_bytes: usize,
    rows_out: u64,
    cancel: Arc<AtomicBool>,
}

impl SortedBatches {
    /// The batches' schema.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The sort's statistics, once every batch has been taken.
    pub fn stats(&self) -> Option<&SortStats> {
        self.blocks.stats()
    }

    /// Rows given so far.
    pub fn rows_out(&self) -> u64 {
        self.rows_out
    }
}

impl Iterator for SortedBatches {
    type Item = Result<RecordBatch, TableError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Blocks of sorted rows held until a batch is full, and the rows as
        // (block, offset, length).
        let (mut held, mut spans): (Vec<emsort_sort::Block>, Vec<Span>) = (Vec::new(), Vec::new());
        let mut held_bytes = 0;
        while held_bytes < self.batch_bytes {
            let Some(block) = self.blocks.next() else { break };
            let block = match block {
                Ok(b) => b,
                Err(e) => return Some(Err(e.into())),
            };
            if self.cancel.load(Ordering::Relaxed) {
                return Some(Err(interrupted(Path::new(STREAM))));
            }
            let mut at = 0;
            while at < block.len() {
                let len = rows::row_len(&block[at..]).expect("blocks of whole framed rows");
                spans.push((held.len(), at, len));
                at += len;
            }
            held_bytes += block.len();
            held.push(block);
        }
        if spans.is_empty() {
            return None;
        }
        let rows: Vec<&[u8]> = spans.iter().map(|&(b, at, len)| &held[b][at..at + len]).collect();
        self.rows_out += rows.len() as u64;
        Some(self.conv.batch(&self.schema, &rows, Path::new(STREAM)))
    }
}

/// A framed row in the blocks held: (block, offset, length).
type Span = (usize, usize, usize);
