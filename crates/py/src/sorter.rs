//! `emsort.Sorter`: a sort fed by the program itself, for data sets it
//! generates and that need not fit in memory (issue 16).
//!
//! A thin wrapper around [`emsort_sort::Sorter`] and what it turns into:
//!
//! ```text
//!  Sorter(format, memory=…)  push(data)…  finish()      for block in sorter   (or write(path))
//!  ─────────────────────────  ──────────  ────────  ─►  ─────────────────────────────────────
//!  State::Pushing(Sorter) ───────────────►  State::Finished(Sorted) ─► Iterating(Blocks) ─► Done(stats)
//!                                      any exception (Ctrl-C too) or close() ─► Failed / Closed
//! ```
//!
//! The state sits in a `Mutex` (a pyclass must be `Send` and `Sync`); a
//! call takes it out (leaving `Busy`, so a second Python thread using the
//! same sorter meanwhile gets a `RuntimeError` instead of waiting for the
//! lock with the GIL held) and puts back what follows.
//!
//! - `push` takes any bytes-like object through the buffer protocol
//!   ([`RawBuffer`], read-only is fine) and hands it to the sorter in pieces
//!   of [`PIECE`] with the GIL released. A piece of [`WATCHED`] bytes or
//!   more is pushed by a worker thread while this thread polls for Ctrl-C
//!   and reports progress every 50 ms ([`worker::watch`]): a push waits
//!   while run formation is busy, which takes as long as sorting a chunk of
//!   M/2. Smaller pieces are pushed on this thread; signals are checked
//!   after each.
//! - `finish` and `write` run on a watched worker thread.
//! - Iterating takes one block at a time with the GIL released; blocks are
//!   produced as the last merge runs, so none waits long. Each block becomes
//!   a numpy array without a copy (`PyArray1::from_vec`, then a view of the
//!   format's dtype or a reshape to records), or for `lines` a list of
//!   `bytes` (one copy).
//!
//! An exception from `push`, `finish`, `write` or the iteration (including
//! `KeyboardInterrupt` and one raised by the progress callback) cancels the
//! sort: its temporary files are removed and the sorter is left failed.
//! Closing it, leaving its `with` block or dropping it before the end
//! cancels it the same way (with the GIL released while the sort thread
//! stops).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use emsort_sort::{Blocks, Format, SortStats, Sorted, Sorter};
use numpy::{PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::args::PlanArgs;
use crate::array::Num;
use crate::buffer::RawBuffer;
use crate::order::OrderArgs;
use crate::worker::{self, Reporter, Tracker};

/// `push` hands the data over in pieces of this many bytes, with a check
/// for signals between two pieces.
const PIECE: usize = 4 << 20;
/// Pieces of this many bytes or more are pushed by a watched worker thread.
const WATCHED: usize = 1 << 20;

/// Where a sorter is; see the module docs.
enum State {
    /// Taking items.
    Pushing(Sorter),
    /// Input ended; the last merge waits for its output to be chosen.
    Finished(Sorted),
    /// The result is being taken block by block.
    Iterating(Blocks),
    /// The result was taken (iterated to its end or written).
    Done(Option<SortStats>),
    /// Closed before the end: the sort was cancelled.
    Closed,
    /// An exception stopped the sort (its message).
    Failed(String),
    /// A call of another thread holds the state.
    Busy,
}

impl State {
    fn name(&self) -> &'static str {
        match self {
            State::Pushing(_) => "pushing",
            State::Finished(_) => "finished",
            State::Iterating(_) => "iterating",
            State::Done(_) => "done",
            State::Closed => "closed",
            State::Failed(_) => "failed",
            State::Busy => "busy",
        }
    }

    /// A sort thread is running (dropping the state cancels it).
    fn running(&self) -> bool {
        matches!(self, State::Pushing(_) | State::Finished(_) | State::Iterating(_))
    }

    /// The error for calling `what` in this state (never `Busy`).
    fn misuse(&self, what: &str) -> PyErr {
        match self {
            State::Closed => PyValueError::new_err(format!("{what} on a closed Sorter")),
            State::Failed(why) => PyRuntimeError::new_err(format!(
                "{what}: the sort was stopped by an earlier exception ({why}); make a new Sorter"
            )),
            State::Pushing(_) => PyRuntimeError::new_err(format!(
                "{what} before finish(): call finish() once everything is pushed"
            )),
            State::Finished(_) | State::Iterating(_) if what == "push()" => {
                PyRuntimeError::new_err("push() after finish(): the input has ended")
            }
            State::Finished(_) => PyRuntimeError::new_err(format!("{what}: finish() was already called")),
            State::Iterating(_) if what == "finish()" => {
                PyRuntimeError::new_err("finish(): finish() was already called")
            }
            State::Iterating(_) => PyRuntimeError::new_err(format!(
                "{what}: the sorted items are being taken by an iteration already"
            )),
            State::Done(_) => PyRuntimeError::new_err(format!(
                "{what}: the sorted items were already taken (by an iteration or write())"
            )),
            State::Busy => busy(),
        }
    }
}

fn busy() -> PyErr {
    PyRuntimeError::new_err("the Sorter is in use by another thread")
}

/// Sort data the program pushes, larger than memory: push, finish, then
/// iterate or write.
///
/// Sorter(format="lines", *, memory=None, temp_dirs=None, parallel=None,
/// reverse=False, io="auto", compress="auto", block_size=None, policy="optimal",
/// fan_in=None, progress=None, **order): the options of `sort`, its
/// ordering options for lines (emsort.OrderOptions) included (memory
/// default: a quarter of the available RAM). push(data) any bytes-like
/// object of items (cut anywhere); finish() (returns the sorter); then
/// iterate (numpy arrays of the format's dtype, (n, size) uint8 arrays for
/// records, lists of bytes for lines) or write(path) -> stats; stats;
/// close(); a context manager.
#[pyclass(name = "Sorter", module = "emsort", frozen)]
pub(crate) struct PySorter {
    state: Mutex<State>,
    format: Format,
    /// The byte that ends each line (`lines`): `\n`, or NUL with `zero_terminated`.
    eol: u8,
    /// The order of lines, which says whether they are CSV records.
    order: Option<emsort_sort::keys::LineOrder>,
    memory: u64,
    /// The progress callback, if any.
    progress: Option<Py<PyAny>>,
    tracker: Arc<Tracker>,
    reporter: Mutex<Reporter>,
    /// The sorter's cancel flag (set on Ctrl-C, an exception or close).
    cancel: Arc<AtomicBool>,
    /// Bytes pushed so far.
    pushed: AtomicU64,
}

impl PySorter {
    fn lock(&self) -> MutexGuard<'_, State> {
        worker::lock(&self.state)
    }

    /// Takes the state out, leaving `Busy`.
    fn take(&self) -> PyResult<State> {
        let mut g = self.lock();
        if let State::Busy = *g {
            return Err(busy());
        }
        Ok(std::mem::replace(&mut *g, State::Busy))
    }

    fn put(&self, s: State) {
        *self.lock() = s;
    }

    /// Puts `s` back and returns the error for calling `what` in it.
    fn refuse(&self, s: State, what: &str) -> PyErr {
        let e = s.misuse(what);
        self.put(s);
        e
    }

    /// Cancels the sort `s` holds (its thread stops, its temporary files go,
    /// with the GIL released meanwhile) and leaves the sorter failed by `e`;
    /// returns `e`.
    fn fail(&self, py: Python<'_>, s: State, e: PyErr) -> PyErr {
        self.cancel.store(true, Ordering::SeqCst);
        py.detach(move || drop(s));
        self.failed(e)
    }

    /// Leaves the sorter failed by `e` (its sort is already gone); returns `e`.
    fn failed(&self, e: PyErr) -> PyErr {
        self.cancel.store(true, Ordering::SeqCst);
        self.put(State::Failed(e.to_string()));
        e
    }

    fn progress<'py>(&self, py: Python<'py>) -> Option<&Bound<'py, PyAny>> {
        self.progress.as_ref().map(|p| p.bind(py))
    }

    fn reporter(&self) -> MutexGuard<'_, Reporter> {
        worker::lock(&self.reporter)
    }

    /// Runs `work` on a watched worker thread (Ctrl-C, progress; the
    /// current phase reported at the end when `last_call`).
    fn watch<T: Send>(
        &self,
        py: Python<'_>,
        last_call: bool,
        work: impl FnOnce() -> Result<T, emsort_sort::SortError> + Send,
    ) -> PyResult<T> {
        let progress = self.progress(py);
        worker::watch(py, progress, &mut self.reporter(), &self.tracker, &self.cancel, last_call, work)
    }

    /// A `TypeError` for numpy arrays whose items are not the format's
    /// (an `int64` array pushed to a `u32` sorter would be taken as twice
    /// as many numbers): number formats take their own dtype, every format
    /// takes bytes (`uint8`, `int8`, `S…`, structured `V…` dtypes).
    fn check_array(&self, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let Ok(arr) = data.cast::<PyUntypedArray>() else {
            return Ok(());
        };
        let d = arr.dtype();
        let raw = matches!(d.kind(), b'u' | b'i') && d.itemsize() == 1 || matches!(d.kind(), b'S' | b'V');
        let num = Num::of_format(self.format);
        if raw || num.is_some_and(|n| d.is_equiv_to(&n.descr(data.py()))) {
            return Ok(());
        }
        let dt = d.str().map(|s| s.to_string()).unwrap_or_default();
        let want = match num {
            Some(n) => {
                format!("an array of {}", n.descr(data.py()).str().map(|s| s.to_string()).unwrap_or_default())
            }
            None => "bytes (bytes, a uint8 array or a structured array)".to_string(),
        };
        Err(PyTypeError::new_err(format!(
            "push: an array of {dt} does not hold {} items; push {want} (or its bytes: a.view(numpy.uint8))",
            self.format
        )))
    }

    /// One block of sorted items as a Python object.
    fn block<'py>(&self, py: Python<'py>, block: emsort_sort::Block) -> PyResult<Bound<'py, PyAny>> {
        match self.format {
            Format::Lines => {
                let spans = emsort_sort::line_spans(&block, self.eol, self.order.as_ref());
                Ok(PyList::new(py, spans.into_iter().map(|r| PyBytes::new(py, &block[r])))?.into_any())
            }
            Format::Rec(r) => {
                let n = block.len() / r.size;
                Ok(PyArray1::from_vec(py, block.into_vec()).reshape([n, r.size])?.into_any())
            }
            f => {
                let num = Num::of_format(f).expect("a number format");
                PyArray1::from_vec(py, block.into_vec()).call_method1("view", (num.descr(py),))
            }
        }
    }
}

#[pymethods]
impl PySorter {
    /// A sorter with the options of `sort`.
    #[new]
    #[pyo3(signature = (
        format = "lines", *, memory = None, temp_dirs = None, parallel = None, reverse = false,
        io = "auto", compress = "auto", block_size = None, policy = "optimal", fan_in = None,
        progress = None, **order
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        format: &str,
        memory: Option<&Bound<'_, PyAny>>,
        temp_dirs: Option<&Bound<'_, PyAny>>,
        parallel: Option<usize>,
        reverse: bool,
        io: &str,
        compress: &str,
        block_size: Option<&Bound<'_, PyAny>>,
        policy: &str,
        fan_in: Option<usize>,
        progress: Option<&Bound<'_, PyAny>>,
        order: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        worker::check_callback(progress)?;
        let order = OrderArgs::from_kwargs("Sorter.__new__", order)?;
        let a = PlanArgs {
            format,
            memory,
            fan_in,
            temp_dirs,
            parallel,
            reverse,
            io,
            compress,
            block_size,
            policy,
            order,
        };
        // The input's size is not known: the default memory is a quarter
        // of the available RAM, as for `emsort sort` reading a pipe.
        let plan = a.plan(py, None, None)?;
        let (format, memory, eol) = (plan.format(), plan.memory(), plan.eol());
        let order = plan.line_order().cloned();
        let tracker = Arc::new(Tracker::default());
        let cancel = Arc::new(AtomicBool::new(false));
        let sorter = Sorter::with_progress(plan, tracker.clone(), cancel.clone())
            .map_err(|e| crate::error::sort_error(py, &e))?;
        Ok(PySorter {
            state: Mutex::new(State::Pushing(sorter)),
            format,
            eol,
            order,
            memory,
            progress: progress.map(|p| p.clone().unbind()),
            tracker,
            reporter: Mutex::new(Reporter::default()),
            cancel,
            pushed: AtomicU64::new(0),
        })
    }

    /// Adds the bytes of `data` (items of the format, cut anywhere) to the
    /// input; waits while run formation is busy.
    fn push(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.check_array(data)?;
        let buf = RawBuffer::get(data, false, "data")?;
        let bytes = buf.bytes();
        let mut sorter = match self.take()? {
            State::Pushing(s) => s,
            other => return Err(self.refuse(other, "push()")),
        };
        for piece in bytes.chunks(PIECE) {
            let pushed = if piece.len() >= WATCHED {
                self.watch(py, false, || sorter.push(piece))
            } else {
                py.detach(|| sorter.push(piece))
                    .map_err(|e| crate::error::sort_error(py, &e))
                    .and_then(|()| py.check_signals())
                    .and_then(|()| self.reporter().tick(self.progress(py), &self.tracker, false))
            };
            if let Err(e) = pushed {
                return Err(self.fail(py, State::Pushing(sorter), e));
            }
        }
        self.pushed.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.put(State::Pushing(sorter));
        Ok(())
    }

    /// Ends the input; returns the sorter once every run is formed and
    /// every merge but the last is done.
    fn finish(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let py = slf.py();
        let this = slf.get();
        let sorter = match this.take()? {
            State::Pushing(s) => s,
            other => return Err(this.refuse(other, "finish()")),
        };
        let sorted = this.watch(py, true, move || sorter.finish()).map_err(|e| this.failed(e))?;
        this.put(State::Finished(sorted));
        Ok(slf)
    }

    /// Writes the sorted items to `path` (replaced atomically when
    /// complete); returns the statistics of `sort`.
    fn write<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        let sorted = match self.take()? {
            State::Finished(s) => s,
            other => return Err(self.refuse(other, "write()")),
        };
        let stats = self.watch(py, true, move || sorted.write_to(&path)).map_err(|e| self.failed(e))?;
        let d = crate::files::stats_dict(py, &stats);
        self.put(State::Done(Some(stats)));
        d
    }

    fn __iter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let this = slf.get();
        match this.take()? {
            State::Finished(sorted) => this.put(State::Iterating(sorted.blocks())),
            s @ State::Iterating(_) => this.put(s),
            other => return Err(this.refuse(other, "iteration")),
        }
        Ok(slf)
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut blocks = match self.take()? {
            State::Iterating(b) => b,
            State::Finished(sorted) => sorted.blocks(),
            s @ State::Done(_) => {
                self.put(s);
                return Ok(None);
            }
            other => return Err(self.refuse(other, "iteration")),
        };
        match py.detach(|| blocks.next()) {
            Some(Ok(block)) => {
                let checked = py
                    .check_signals()
                    .and_then(|()| self.reporter().tick(self.progress(py), &self.tracker, false));
                if let Err(e) = checked {
                    return Err(self.fail(py, State::Iterating(blocks), e));
                }
                self.put(State::Iterating(blocks));
                self.block(py, block).map(Some)
            }
            Some(Err(e)) => Err(self.fail(py, State::Iterating(blocks), crate::error::sort_error(py, &e))),
            None => {
                let stats = blocks.stats().cloned();
                self.put(State::Done(stats));
                self.reporter().tick(self.progress(py), &self.tracker, true)?;
                Ok(None)
            }
        }
    }

    /// The statistics of `sort` once the sorted items were all taken
    /// (iterated to the end or written); None before.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let stats = match &*self.lock() {
            State::Done(Some(s)) => s.clone(),
            _ => return Ok(None),
        };
        crate::files::stats_dict(py, &stats).map(Some)
    }

    /// The format's name.
    #[getter]
    fn format(&self) -> String {
        self.format.to_string()
    }

    /// The memory budget M in bytes.
    #[getter]
    fn memory(&self) -> u64 {
        self.memory
    }

    /// Bytes pushed so far.
    #[getter]
    fn pushed(&self) -> u64 {
        self.pushed.load(Ordering::Relaxed)
    }

    /// `pushing`, `finished`, `iterating`, `done`, `closed`, `failed`, or
    /// `busy` while a call of another thread is under way.
    #[getter]
    fn state(&self) -> &'static str {
        self.lock().name()
    }

    /// Cancels the sort unless its result was taken (its thread stops and
    /// its temporary files are removed); closing again does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let s = {
            let mut g = self.lock();
            match &*g {
                State::Busy => return Err(busy()),
                State::Done(_) | State::Closed | State::Failed(_) => return Ok(()),
                _ => std::mem::replace(&mut *g, State::Busy),
            }
        };
        self.cancel.store(true, Ordering::SeqCst);
        py.detach(move || drop(s));
        self.put(State::Closed);
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "<emsort.Sorter format={} memory={} pushed={} {}>",
            self.format,
            emsort_io::format_size(self.memory),
            self.pushed(),
            self.state()
        )
    }
}

impl Drop for PySorter {
    /// Dropped before the end: cancels the sort, waiting for its thread
    /// with the GIL released when the interpreter allows.
    fn drop(&mut self) {
        let s = std::mem::replace(self.state.get_mut().unwrap_or_else(|p| p.into_inner()), State::Closed);
        if s.running() {
            self.cancel.store(true, Ordering::SeqCst);
            // If the interpreter cannot be attached (it is shutting down),
            // the closure and the state in it are dropped right here.
            let _ = Python::try_attach(move |py| py.detach(move || drop(s)));
        }
    }
}
