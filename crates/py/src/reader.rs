//! `emsort.Reader`: byte ranges of a file at any offset with one of
//! emsort's five readers (`stream`, `mmap`, `pread`, `uring`, `adaptive`).
//!
//! A thin wrapper around [`emsort_io::AnyReader`] behind a mutex: reads of
//! 64 KiB or more release the GIL (so several Python threads may share
//! a reader; their reads then take turns). `readinto` reads straight into
//! any writable contiguous buffer (bytearray, memoryview, numpy array).

use std::path::PathBuf;
use std::sync::Mutex;

use emsort_io::{open_reader, AnyReader, Reader, ReaderKind};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::array::reader_config;
use crate::buffer::RawBuffer;
use crate::error::io_error;
use crate::worker::lock;

/// Reads at least this many bytes with the GIL released.
const DETACH_BYTES: usize = 64 << 10;

/// Read byte ranges of a file at any offset with one of emsort's readers.
///
/// Reader(path, kind="adaptive", *, block_size=None, queue_depth=None);
/// kind: stream, mmap, pread, uring or adaptive. read(offset, size) ->
/// bytes, readinto(offset, buffer) -> int, name, path, kind, size /
/// len(reader), close(), closed; a context manager.
#[pyclass(name = "Reader", module = "emsort")]
pub(crate) struct PyReader {
    inner: Mutex<Option<AnyReader>>,
    path: PathBuf,
    kind: ReaderKind,
    size: u64,
}

impl PyReader {
    /// Runs `f` on the open reader; a closed one is a `ValueError`, as
    /// for Python's files.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        detach: bool,
        f: impl FnOnce(&mut AnyReader) -> emsort_io::Result<T> + Send,
    ) -> PyResult<T> {
        let run = || lock(&self.inner).as_mut().map(f);
        let r = if detach { py.detach(run) } else { run() };
        match r {
            None => Err(PyValueError::new_err(format!(
                "I/O operation on a closed reader ({})",
                self.path.display()
            ))),
            Some(r) => r.map_err(|e| io_error(py, &e)),
        }
    }
}

#[pymethods]
impl PyReader {
    /// Opens `path` with a reader of `kind`.
    #[new]
    #[pyo3(signature = (path, kind = "adaptive", *, block_size = None, queue_depth = None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        kind: &str,
        block_size: Option<&Bound<'_, PyAny>>,
        queue_depth: Option<u32>,
    ) -> PyResult<Self> {
        let mut cfg = reader_config(py, kind)?;
        if let Some(b) = crate::args::block_size(block_size)? {
            cfg = cfg.block_size(b);
        }
        if let Some(q) = queue_depth {
            if q == 0 {
                return Err(PyValueError::new_err("queue_depth must be at least 1"));
            }
            cfg = cfg.queue_depth(q);
        }
        let r = py.detach(|| open_reader(&path, &cfg)).map_err(|e| io_error(py, &e))?;
        let size = r.len();
        Ok(PyReader { inner: Mutex::new(Some(r)), kind: cfg.kind, path, size })
    }

    /// Reads up to `size` bytes at byte `offset`: fewer at the end of the
    /// file, `b""` at or past it.
    fn read<'py>(&self, py: Python<'py>, offset: u64, size: usize) -> PyResult<Bound<'py, PyBytes>> {
        let want = (self.size.saturating_sub(offset)).min(size as u64) as usize;
        let mut got = 0;
        let bytes = PyBytes::new_with(py, want, |dst| {
            got = self.with(py, want >= DETACH_BYTES, |r| r.read_bytes(offset, want, dst))?;
            Ok(())
        })?;
        if got == want {
            Ok(bytes)
        } else {
            // The file shrank since it was opened.
            Ok(PyBytes::new(py, &bytes.as_bytes()[..got]))
        }
    }

    /// Reads `len(buffer)` bytes (fewer at the end of the file) at byte
    /// `offset` straight into a writable buffer; returns how many.
    fn readinto(&self, py: Python<'_>, offset: u64, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut b = RawBuffer::get(buffer, true, "buffer")?;
        let dst = b.bytes_mut();
        let n = dst.len();
        self.with(py, n >= DETACH_BYTES, |r| r.read_bytes(offset, n, dst))
    }

    /// The file's path.
    #[getter]
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The reader kind: `stream`, `mmap`, `pread`, `uring` or `adaptive`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// The file's size in bytes when it was opened.
    #[getter]
    fn size(&self) -> u64 {
        self.size
    }

    fn __len__(&self) -> usize {
        self.size as usize
    }

    /// For the `adaptive` reader, the technique of the last read (`mmap`,
    /// `pread` or `uring`); None for the other kinds, before the first
    /// read and after `close`.
    #[getter]
    fn last_choice(&self) -> Option<String> {
        lock(&self.inner).as_ref().and_then(|r| r.last_choice()).map(|c| c.kind.name().to_string())
    }

    /// Whether the reader is closed.
    #[getter]
    fn closed(&self) -> bool {
        lock(&self.inner).is_none()
    }

    /// Closes the file (again: nothing happens).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = lock(&self.inner).take(); // unlocked before closing
        match taken {
            None => Ok(()),
            Some(mut r) => py.detach(move || r.close()).map_err(|e| io_error(py, &e)),
        }
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
            "<emsort.Reader {:?} kind={} size={}{}>",
            self.path.display().to_string(),
            self.kind.name(),
            self.size,
            if self.closed() { " closed" } else { "" }
        )
    }
}
