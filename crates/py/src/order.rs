//! GNU `sort`'s ordering options as Python keywords, compiled into the
//! engine's [`LineOrder`] (issue 40: Python speaks the same order as
//! `emsort sort` and `LC_ALL=C sort`).
//!
//! Each keyword is named after GNU sort's long option, with `-` as `_`:
//!
//! | keyword | GNU | value |
//! |---|---|---|
//! | `key` | `-k`, `--key` | a spec (`"3,3n"`) or a list of specs, in order |
//! | `field_separator` | `-t` | one byte (`str` or `bytes`); `"\0"` is NUL |
//! | `ignore_leading_blanks` | `-b` | bool |
//! | `dictionary_order` | `-d` | bool |
//! | `ignore_case` | `-f` | bool |
//! | `general_numeric_sort` | `-g` | bool |
//! | `human_numeric_sort` | `-h` | bool |
//! | `ignore_nonprinting` | `-i` | bool |
//! | `month_sort` | `-M` | bool |
//! | `numeric_sort` | `-n` | bool |
//! | `random_sort`, `random_source` | `-R`, `--random-source` | bool, a path |
//! | `version_sort` | `-V` | bool |
//! | `reverse` | `-r` | bool (the only one other formats take) |
//! | `stable` | `-s` | bool |
//! | `unique` | `-u` | bool |
//! | `zero_terminated` | `-z` | bool |
//!
//! [`OrderArgs::compile`] builds the [`OrderOptions`] as the command line
//! does (`crates/cli/src/cmd/sort.rs`: the flags on the global key, the
//! `-k` specs through [`Key::parse`]) and compiles them with
//! [`LineOrder::new`], whose GNU message (`options '-gn' are
//! incompatible`) becomes a `ValueError`. Numbers and records have an order
//! of their own: [`OrderArgs::refuse`] names the options they were given.
//!
//! ```python
//! emsort.sort("sales.csv", "by-amount.csv", key="3,3n", field_separator=",")
//! ```

use std::io::Read;
use std::path::PathBuf;

use emsort_sort::keys::{Key, KeyKind, LineOrder, OrderOptions};
use emsort_sort::Format;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// The ordering options of one call, as Python gave them.
#[derive(Default)]
pub(crate) struct OrderArgs<'a, 'py> {
    pub key: Option<&'a Bound<'py, PyAny>>,
    pub field_separator: Option<&'a Bound<'py, PyAny>>,
    pub ignore_leading_blanks: bool,
    pub dictionary_order: bool,
    pub ignore_case: bool,
    pub general_numeric_sort: bool,
    pub human_numeric_sort: bool,
    pub ignore_nonprinting: bool,
    pub month_sort: bool,
    pub numeric_sort: bool,
    pub random_sort: bool,
    pub random_source: Option<PathBuf>,
    pub version_sort: bool,
    pub stable: bool,
    pub unique: bool,
    pub zero_terminated: bool,
}

/// A compiled order and the byte that ends each line.
pub(crate) struct Lines {
    /// The order (keys, `-r`, `-s`, `-u`).
    pub order: LineOrder,
    /// `\n`, or NUL with `zero_terminated`.
    pub eol: u8,
}

impl OrderArgs<'_, '_> {
    /// The global flags: (given, GNU's letter, keyword).
    fn flags(&self) -> [(bool, char, &'static str); 11] {
        [
            (self.ignore_leading_blanks, 'b', "ignore_leading_blanks"),
            (self.dictionary_order, 'd', "dictionary_order"),
            (self.ignore_case, 'f', "ignore_case"),
            (self.general_numeric_sort, 'g', "general_numeric_sort"),
            (self.human_numeric_sort, 'h', "human_numeric_sort"),
            (self.ignore_nonprinting, 'i', "ignore_nonprinting"),
            (self.month_sort, 'M', "month_sort"),
            (self.numeric_sort, 'n', "numeric_sort"),
            (self.random_sort, 'R', "random_sort"),
            (self.version_sort, 'V', "version_sort"),
            (false, 'r', "reverse"),
        ]
    }

    /// The keywords given (but `reverse`), in the order of the signature.
    pub(crate) fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.key.is_some_and(|k| !k.is_none()) {
            out.push("key");
        }
        if self.field_separator.is_some_and(|t| !t.is_none()) {
            out.push("field_separator");
        }
        out.extend(self.flags().iter().filter(|f| f.0).map(|f| f.2));
        for (on, name) in [
            (self.random_source.is_some(), "random_source"),
            (self.stable, "stable"),
            (self.unique, "unique"),
            (self.zero_terminated, "zero_terminated"),
        ] {
            if on {
                out.push(name);
            }
        }
        out
    }

    /// `ValueError` when ordering options other than `reverse` were given
    /// for a format that is not `lines`.
    pub(crate) fn refuse(&self, format: Format) -> PyResult<()> {
        let given = self.given();
        if given.is_empty() {
            return Ok(());
        }
        Err(PyValueError::new_err(format!(
            "{} order{} text lines (format \"lines\"), not format {format}: numbers and records have \
             their own order (only reverse applies to them)",
            given.join(", "),
            if given.len() == 1 { "s" } else { "" }
        )))
    }

    /// The options as the command line gathers them, with `reverse` as
    /// the global `-r`.
    pub(crate) fn options(&self, py: Python<'_>, reverse: bool) -> PyResult<OrderOptions> {
        let mut o = OrderOptions::default();
        for (on, letter, _) in self.flags() {
            if on || (letter == 'r' && reverse) {
                o.global.set_global(letter);
            }
        }
        for spec in key_specs(self.key)? {
            o.keys.push(Key::parse(&spec).map_err(|e| PyValueError::new_err(format!("key: {e}")))?);
        }
        o.tab = tab(self.field_separator)?;
        o.stable = self.stable;
        o.unique = self.unique;
        o.salt = salt(py, self.random_source.as_deref())?;
        Ok(o)
    }

    /// The compiled order, `reverse` being the global `-r`; GNU's message
    /// as a `ValueError` for options that cannot go together.
    pub(crate) fn compile(&self, py: Python<'_>, reverse: bool) -> PyResult<Lines> {
        let order = LineOrder::new(self.options(py, reverse)?).map_err(PyValueError::new_err)?;
        Ok(Lines { order, eol: if self.zero_terminated { 0 } else { b'\n' } })
    }
}

/// Whether any key of `order` shuffles (`-R`): two orders compiled apart
/// agree only when they share the salt.
pub(crate) fn shuffles(order: &LineOrder) -> bool {
    order.keys().iter().any(|k| k.kind() == KeyKind::Random)
}

/// The `-k` specs: `None`, one `str`, or a sequence of `str`.
fn key_specs(v: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let bad = |v: &Bound<'_, PyAny>| {
        PyTypeError::new_err(format!(
            "key must be a key spec such as \"3,3n\" (sort -k) or a list of them, not {}",
            v.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    };
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(Vec::new());
    };
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(vec![s.to_str()?.to_owned()]);
    }
    if v.is_instance_of::<PyBytes>() {
        return Err(bad(v));
    }
    let mut out = Vec::new();
    for item in v.try_iter().map_err(|_| bad(v))? {
        let item = item?;
        let s = item.cast::<PyString>().map_err(|_| bad(&item))?;
        out.push(s.to_str()?.to_owned());
    }
    Ok(out)
}

/// `-t`: one byte, from a `str` of one ASCII character or a `bytes` of
/// one byte (GNU's messages for an empty or a longer one).
fn tab(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u8>> {
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let (bytes, shown) = if let Ok(s) = v.cast::<PyString>() {
        let s = s.to_str()?;
        (s.as_bytes().to_vec(), s.to_owned())
    } else if let Ok(b) = v.cast::<PyBytes>() {
        (b.as_bytes().to_vec(), String::from_utf8_lossy(b.as_bytes()).into_owned())
    } else {
        return Err(PyTypeError::new_err(format!(
            "field_separator must be one character (str or bytes), not {}",
            v.get_type().name()?
        )));
    };
    match bytes.as_slice() {
        [] => Err(PyValueError::new_err("field_separator: empty tab")),
        [b] => Ok(Some(*b)),
        _ => Err(PyValueError::new_err(format!(
            "field_separator: multi-character tab '{shown}' (one byte: an ASCII character, \"\\0\" or bytes)"
        ))),
    }
}

/// The 16 bytes that salt `-R`'s hashes: the first 16 of `random_source`
/// (as GNU reads them), else from the kernel's random source.
fn salt(py: Python<'_>, source: Option<&std::path::Path>) -> PyResult<[u8; 16]> {
    let mut b = [0u8; 16];
    match source {
        Some(p) => {
            let err = |op, e| crate::error::io_error(py, &emsort_io::Error::from_io(op, p, e));
            let mut f = std::fs::File::open(p).map_err(|e| err("open", e))?;
            f.read_exact(&mut b).map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => PyValueError::new_err(format!(
                    "random_source {}: end of file (the salt takes its first 16 bytes)",
                    p.display()
                )),
                _ => err("read", e),
            })?;
        }
        None => {
            // SAFETY: getrandom writes at most b.len() bytes into b.
            let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
            if n != b.len() as isize {
                // Without entropy the shuffle is only less random; GNU
                // would have failed to start: keep going as the CLI does.
                b = [0; 16];
            }
        }
    }
    Ok(b)
}
