//! `emsort.LineOrder`: GNU `sort`'s order of text lines, in memory.
//!
//! The file sorts take the ordering options as keywords (module `order`);
//! a program that sorts or cuts lines itself — emsort.ray's map and merge
//! tasks — needs the same order on buffers, so that its parts come out
//! exactly as `emsort.sort` and `LC_ALL=C sort` order them (issue 40). A
//! `LineOrder` compiles the options once and then:
//!
//! - `sort(data)` sorts the lines of a buffer as run formation sorts a
//!   chunk ([`emsort_sort::sort_in_memory`]): by their normalised keys, then
//!   GNU's `-V`/`-R` keys and last resort; with `stable` or `unique`, lines
//!   equal by their keys keep their order in `data`, as GNU keeps their
//!   input order, and `unique` keeps the first of each group.
//! - `partition_points(sorted, boundaries)` finds, by binary search with
//!   [`LineOrder::compare`], where each boundary line cuts sorted lines (a
//!   byte offset), so that lines equal by the order fall in one part.
//! - `compare(a, b)` and `check(path)` ([`emsort_sort::check::check_order`],
//!   `sort -c`).
//! - `record_spans(path, offsets)` finds the first whole record at or after
//!   each offset of a file, reading it from its start with the record
//!   parse of the sort ([`RecordEnds`]: a CSV record may hold newlines),
//!   and `count(data)` counts records: emsort.ray cuts CSV inputs with
//!   them.
//!
//! With `header`, the order takes the header record as `columns` (keys may
//! name its columns): the lines given to `sort` are the records after it,
//! and `check(path)` skips the file's first record.
//!
//! ```python
//! order = emsort.LineOrder(key="3,3n", field_separator=",")
//! data = order.sort(b"a,x,10\nb,y,9\n")          # b"b,y,9\na,x,10\n"
//! cuts = order.partition_points(data, [b"c,z,10"])  # [6]
//! ```

use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use emsort_sort::keys::LineOrder;
use emsort_sort::record_ends::RecordEnds;
use emsort_sort::{Format, SortError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::buffer::RawBuffer;
use crate::order::{self, Header, Lines, OrderArgs};
use crate::worker;

/// Reads through, counting the lines and the records (CSV records may
/// span lines) and stopping when `cancel` is set.
struct Counting<'a, R> {
    inner: R,
    eol: u8,
    ends: u64,
    records: RecordEnds,
    /// Record ends so far, and the offset just after the last one.
    record_ends: u64,
    after_record: u64,
    read: u64,
    /// Records before the first one `first` takes (the header's one).
    skip: u64,
    /// The spans of the first record after the `skip` ones and of the
    /// last record ended so far.
    first: Option<(u64, u64)>,
    last: Option<(u64, u64)>,
    last_byte: Option<u8>,
    cancel: &'a AtomicBool,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.load(AtomicOrdering::Relaxed) {
            return Err(std::io::Error::from(std::io::ErrorKind::Interrupted));
        }
        let n = self.inner.read(buf)?;
        self.ends += buf[..n].iter().filter(|&&b| b == self.eol).count() as u64;
        let (ends, after, skip) = (&mut self.record_ends, &mut self.after_record, self.skip);
        let (first, last) = (&mut self.first, &mut self.last);
        self.records.feed(&buf[..n], &mut |p| {
            if *ends >= skip {
                *last = Some((*after, p + 1));
                first.get_or_insert((*after, p + 1));
            }
            *ends += 1;
            *after = p + 1;
            true
        });
        self.read += n as u64;
        if n > 0 {
            self.last_byte = Some(buf[n - 1]);
        }
        Ok(n)
    }
}

/// GNU `sort`'s order of text lines, for sorting, cutting and comparing
/// lines in memory.
///
/// LineOrder(*, reverse=False, **order): the ordering options of `sort`
/// (emsort.OrderOptions), compiled once.
/// sort(data) -> bytes, partition_points(sorted_data, boundaries) -> byte
/// offsets, compare(a, b) -> -1/0/1, check(path) -> dict.
#[pyclass(name = "LineOrder", module = "emsort", frozen)]
pub(crate) struct PyLineOrder {
    order: LineOrder,
    eol: u8,
    /// `header` (with `columns`): files start with a header record.
    header: bool,
}

#[pymethods]
impl PyLineOrder {
    /// An order from `sort`'s ordering options; with `header`, `columns`
    /// is the header record (bytes, its terminator optional) whose columns
    /// keys may name.
    #[new]
    #[pyo3(signature = (*, reverse = false, columns = None, **order))]
    fn new(
        py: Python<'_>,
        reverse: bool,
        columns: Option<&Bound<'_, PyAny>>,
        order: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let a = OrderArgs::from_kwargs("LineOrder.__new__", order)?;
        let columns = columns.map(|c| RawBuffer::get(c, false, "columns")).transpose()?;
        let Lines { order, eol, header } =
            a.compile_with(py, reverse, columns.as_ref().map(|c| Header::Record(c.bytes())))?;
        match (header, columns.is_some()) {
            (true, false) => Err(pyo3::exceptions::PyValueError::new_err(
                "header belongs to files (sort, merge_files, Sorter), not to a LineOrder of lines in memory \
                 (give the header record as columns= to name columns in keys)",
            )),
            (false, true) => Err(pyo3::exceptions::PyValueError::new_err(
                "columns is the header record: it needs header=True",
            )),
            _ => Ok(PyLineOrder { order, eol, header }),
        }
    }

    /// The lines of `data` (any bytes-like object; a last line may lack
    /// its terminator) sorted, each ended by the terminator, as bytes; with
    /// `unique`, the first of each group of equal lines only. The GIL is
    /// released.
    fn sort<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let buf = RawBuffer::get(data, false, "data")?;
        let bytes = buf.bytes();
        let sorted = py
            .detach(|| emsort_sort::sort_in_memory(Format::Lines, false, self.eol, Some(&self.order), bytes))
            .map_err(|e| crate::error::sort_error(py, &e))?;
        Ok(PyBytes::new(py, &sorted))
    }

    /// For each boundary line, the byte offset in `sorted_data` of the
    /// first line not before it (a lower bound, as bisect.bisect_left):
    /// bytes [p[j-1], p[j]) hold the lines from boundary j-1 (included) to
    /// boundary j (excluded). `sorted_data` must be sorted by this order.
    fn partition_points(
        &self,
        py: Python<'_>,
        sorted_data: &Bound<'_, PyAny>,
        boundaries: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<usize>> {
        let buf = RawBuffer::get(sorted_data, false, "sorted_data")?;
        let data = buf.bytes();
        let mut bounds: Vec<Vec<u8>> = Vec::new();
        for b in boundaries.try_iter()? {
            bounds.push(RawBuffer::get(&b?, false, "each boundary")?.bytes().to_vec());
        }
        Ok(py.detach(|| {
            let spans = emsort_sort::line_spans(data, self.eol, Some(&self.order));
            bounds
                .iter()
                .map(|b| {
                    let i = spans.partition_point(|r| self.order.compare(&data[r.clone()], b).is_lt());
                    spans.get(i).map_or(data.len(), |r| r.start)
                })
                .collect()
        }))
    }

    /// Compare two lines (without their terminators): -1 if `a` comes
    /// first, 0 if equal by the order, 1 otherwise.
    fn compare(&self, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<i32> {
        let (ba, bb) = (RawBuffer::get(a, false, "a")?, RawBuffer::get(b, false, "b")?);
        Ok(self.order.compare(ba.bytes(), bb.bytes()) as i32)
    }

    /// Check that the file at `path` is sorted by this order (strictly with
    /// `unique`), as `sort -c`, reading it once (with `header`, its first
    /// record is the header, not compared): {"ok", "lines" (counted to the
    /// end, or to the first disorder), "records" (the records, CSV ones
    /// spanning lines, after the header: counted to the end when in
    /// order), "first_record" and "last_record" (None, or the byte span
    /// (start, end) in the file of the first record after the header and
    /// of the last, terminators included, when in order), "disorder": None
    /// or {"line" (1-based), "text" (bytes)}}.
    fn check<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
        let (disorder, lines, records, first, last) = worker::run(py, None, |_, cancel| {
            let io = |op, e| SortError::from(emsort_io::Error::from_io(op, &path, e));
            let file = std::fs::File::open(&path).map_err(|e| io("open", e))?;
            let mut r = Counting {
                inner: file,
                eol: self.eol,
                ends: 0,
                records: RecordEnds::new(self.eol, Some(&self.order)),
                record_ends: 0,
                after_record: 0,
                read: 0,
                skip: u64::from(self.header),
                first: None,
                last: None,
                last_byte: None,
                cancel,
            };
            let d = emsort_sort::check::check_order(
                &mut BufReader::new(&mut r),
                &self.order,
                self.eol,
                self.header,
            )
            .map_err(|e| io("read", e))?;
            let lines = r.ends + u64::from(r.last_byte.is_some_and(|b| b != self.eol));
            let mut records = r.record_ends;
            if r.after_record < r.read {
                // A last record without its terminator.
                if records >= r.skip {
                    r.last = Some((r.after_record, r.read));
                    r.first.get_or_insert((r.after_record, r.read));
                }
                records += 1;
            }
            Ok((d, lines, records.saturating_sub(r.skip), r.first, r.last))
        })?;
        let out = PyDict::new(py);
        out.set_item("ok", disorder.is_none())?;
        out.set_item("lines", disorder.as_ref().map_or(lines, |d| d.line))?;
        out.set_item("records", records)?;
        out.set_item("first_record", first)?;
        out.set_item("last_record", last)?;
        out.set_item("disorder", py.None())?;
        if let Some(d) = disorder {
            let dis = PyDict::new(py);
            dis.set_item("line", d.line)?;
            dis.set_item("text", PyBytes::new(py, &d.text))?;
            out.set_item("disorder", dis)?; // in the place of None
        }
        Ok(out)
    }

    /// The number of lines (records: CSV ones may span lines) in `data`; a
    /// last one may lack its terminator.
    fn count(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        let buf = RawBuffer::get(data, false, "data")?;
        let bytes = buf.bytes();
        Ok(py.detach(|| RecordEnds::count(bytes, self.eol, Some(&self.order))))
    }

    /// For each offset, `(start, end)`: the byte offsets in the file at
    /// `path` of the first record that starts at or after it and of the
    /// byte after its terminator (or the file's end); `(size, size)` when no
    /// record starts there. Records are lines, or CSV records with `csv`
    /// (which may hold newlines in quotes: the file is read from its start
    /// to the last record asked for, in blocks of 1 MiB, whatever the
    /// offsets). A file read to its end that ends inside a record (a quote
    /// never closed) is an `EmsortError` naming the file and the record's
    /// line, as `sort` reports it. The GIL is released; Ctrl-C stops it.
    fn record_spans(&self, py: Python<'_>, path: PathBuf, offsets: Vec<u64>) -> PyResult<Vec<(u64, u64)>> {
        let mut want: Vec<(u64, usize)> = offsets.iter().enumerate().map(|(i, &o)| (o, i)).collect();
        want.sort_unstable();
        worker::run(py, None, |_, cancel| {
            let io = |op, e| SortError::from(emsort_io::Error::from_io(op, &path, e));
            let mut file = std::fs::File::open(&path).map_err(|e| io("open", e))?;
            let mut out = vec![(0, 0); offsets.len()];
            // The record being read starts at `start`; `next` is the first
            // offset (in ascending order) not answered yet.
            let (mut start, mut next) = (0u64, 0usize);
            let mut records = RecordEnds::new(self.eol, Some(&self.order));
            let mut buf = vec![0u8; 1 << 20];
            let mut size = 0u64;
            // Lines before the record being read, for the error of an input
            // that ends inside one (counted once per block).
            let (mut lines, mut start_line) = (0u64, 0u64);
            let count = |d: &[u8]| d.iter().filter(|&&b| b == self.eol).count() as u64;
            let mut at_end = false;
            while next < want.len() {
                if cancel.load(AtomicOrdering::Relaxed) {
                    return Err(SortError::from(emsort_io::Error::new(
                        emsort_io::ErrorKind::Interrupted,
                        &path,
                    )));
                }
                let n = match file.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(io("read", e)),
                };
                if n == 0 {
                    at_end = true;
                    break;
                }
                let block_at = size;
                size += n as u64;
                records.feed(&buf[..n], &mut |p| {
                    // The record [start, p + 1) answers the offsets after
                    // the previous record's start, up to its own.
                    let end = p + 1;
                    while next < want.len() && want[next].0 <= start {
                        out[want[next].1] = (start, end);
                        next += 1;
                    }
                    start = end;
                    next < want.len()
                });
                if start >= block_at {
                    start_line = lines + count(&buf[..(start - block_at) as usize]);
                }
                lines += count(&buf[..n]);
            }
            if at_end {
                if let Some(why) = records.unended() {
                    let kind =
                        emsort_io::ErrorKind::BadInput { line: start_line + 1, reason: why.to_owned() };
                    return Err(SortError::from(emsort_io::Error::new(kind, &path)));
                }
            }
            // A last record without its terminator, then offsets past all.
            for &(o, i) in &want[next..] {
                out[i] = if o <= start && start < size { (start, size) } else { (size, size) };
            }
            Ok(out)
        })
    }

    /// The locale this order compares in (its `LC_COLLATE` name, as
    /// `sort --debug` prints it), `None` for C: what `locale=""` found in
    /// the environment.
    #[getter]
    fn locale(&self) -> Option<String> {
        self.order.locale().map(|l| l.collate_name().to_owned())
    }

    /// Whether a key shuffles (`random_sort`, or an `R` in a key): two
    /// orders agree only when they read the same `random_source`.
    #[getter]
    fn random(&self) -> bool {
        order::shuffles(&self.order)
    }

    /// `unique`.
    #[getter]
    fn unique(&self) -> bool {
        self.order.unique()
    }

    /// The byte that ends each line: `b"\n"`, or `b"\0"` with `zero_terminated`.
    #[getter]
    fn terminator<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &[self.eol])
    }

    fn __repr__(&self) -> String {
        let keys = self.order.json_keys().map_or(self.order.keys().len(), <[_]>::len);
        format!(
            "<emsort.LineOrder {} key{}{}{}{}>",
            keys,
            if keys == 1 { "" } else { "s" },
            if self.order.reverse() { " reverse" } else { "" },
            if self.order.unique() { " unique" } else { "" },
            if self.eol == 0 { " zero_terminated" } else { "" }
        )
    }
}
