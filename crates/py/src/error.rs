//! Library errors as Python exceptions.
//!
//! | Rust error | Python exception |
//! |---|---|
//! | [`ErrorKind::NotFound`] | `EmsortFileNotFoundError` (`EmsortOSError`, `FileNotFoundError`) |
//! | [`ErrorKind::IsADirectory`] | `EmsortIsADirectoryError` (`EmsortOSError`, `IsADirectoryError`) |
//! | [`ErrorKind::PermissionDenied`] | `EmsortPermissionError` (`EmsortOSError`, `PermissionError`) |
//! | a full disk, a failed system call, io_uring unavailable | `EmsortOSError` (`EmsortError`, `OSError`) |
//! | a bad file size, a closed reader, anything else from the library | `EmsortError` (`Exception`) |
//! | a plan that cannot work (memory too small, fan-in 1 …) | `ValueError` |
//!
//! Every `EmsortError` carries the library's message, which names the
//! file. The `OSError` ones also set `errno` when known and then, when the
//! message starts with the path, `strerror` (the rest of the message) and
//! `filename`, so `str()` reads as Python's own: `[Errno 2] no such file:
//! '/data/in.u32'`. Interrupts never reach this table: the caller raises
//! the `KeyboardInterrupt` that stopped the work (module `worker`).

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use emsort_io::ErrorKind;
use emsort_sort::SortError;

/// The exception classes, made once per interpreter.
pub(crate) struct Classes {
    pub base: Py<PyType>,
    pub os: Py<PyType>,
    pub not_found: Py<PyType>,
    pub is_a_directory: Py<PyType>,
    pub permission: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

/// Makes `class name(*bases)` with a docstring, in module `emsort`.
fn class<'py>(py: Python<'py>, name: &str, bases: Vec<Bound<'py, PyAny>>, doc: &str) -> PyResult<Py<PyType>> {
    let ns = PyDict::new(py);
    ns.set_item("__module__", "emsort")?;
    ns.set_item("__doc__", doc)?;
    let t = py.get_type::<PyType>().call1((name, PyTuple::new(py, bases)?, ns))?;
    Ok(t.cast_into::<PyType>()?.unbind())
}

/// The exception classes (made on first use).
pub(crate) fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let builtin = |name: &str| py.import("builtins")?.getattr(name);
        let base = class(
            py,
            "EmsortError",
            vec![py.get_type::<PyException>().into_any()],
            "An error reported by the emsort library; the message names the file concerned.",
        )?;
        let os = class(
            py,
            "EmsortOSError",
            vec![base.bind(py).clone().into_any(), builtin("OSError")?],
            "An emsort error caused by the operating system (a full disk, a failed system call); \
             also an OSError with errno (when known) and filename.",
        )?;
        let sub = |name: &str, builtin_name: &str, doc: &str| -> PyResult<Py<PyType>> {
            class(py, name, vec![os.bind(py).clone().into_any(), builtin(builtin_name)?], doc)
        };
        Ok(Classes {
            not_found: sub(
                "EmsortFileNotFoundError",
                "FileNotFoundError",
                "A file emsort needs does not exist; also a FileNotFoundError.",
            )?,
            is_a_directory: sub(
                "EmsortIsADirectoryError",
                "IsADirectoryError",
                "A directory was given where emsort needs a file; also an IsADirectoryError.",
            )?,
            permission: sub(
                "EmsortPermissionError",
                "PermissionError",
                "emsort may not read or write a path; also a PermissionError.",
            )?,
            base,
            os,
        })
    })
}

/// The Python exception for an I/O layer error.
pub(crate) fn io_error(py: Python<'_>, e: &emsort_io::Error) -> PyErr {
    let c = match classes(py) {
        Ok(c) => c,
        Err(err) => return err,
    };
    let msg = e.to_string();
    let source_errno = std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .and_then(std::io::Error::raw_os_error);
    let (class, errno) = match e.kind() {
        ErrorKind::NotFound => (&c.not_found, Some(libc::ENOENT)),
        ErrorKind::IsADirectory => (&c.is_a_directory, Some(libc::EISDIR)),
        ErrorKind::PermissionDenied => (&c.permission, source_errno.or(Some(libc::EACCES))),
        ErrorKind::DiskFull | ErrorKind::FileTooLarge | ErrorKind::UringUnavailable | ErrorKind::Io(_) => {
            (&c.os, source_errno)
        }
        _ => return PyErr::from_type(c.base.bind(py).clone(), msg),
    };
    let class = class.bind(py).clone();
    let path = e.path().display().to_string();
    let made = match (errno, msg.strip_prefix(&format!("{path}: "))) {
        // OSError(errno, strerror, filename) sets the three attributes;
        // str() is "[Errno 2] no such file: '/the/path'".
        (Some(n), Some(rest)) => class.call1((n, rest, path)),
        // OSError(errno, strerror): "[Errno 28] message".
        (Some(n), None) => class.call1((n, msg)),
        (None, _) => class.call1((msg,)),
    };
    made.map_or_else(|err| err, PyErr::from_value)
}

/// The Python exception for a sort error: I/O errors as [`io_error`],
/// plans that cannot work as `ValueError`, the rest as `EmsortError`.
pub(crate) fn sort_error(py: Python<'_>, e: &SortError) -> PyErr {
    match e {
        SortError::Io(io) => io_error(py, io),
        SortError::MemoryTooSmall { .. } | SortError::MethodMemoryTooSmall { .. } | SortError::BadPlan(_) => {
            PyValueError::new_err(e.to_string())
        }
        other => match classes(py) {
            Ok(c) => PyErr::from_type(c.base.bind(py).clone(), other.to_string()),
            Err(err) => err,
        },
    }
}
