//! GNU `sort`'s ordering options of lines as Python keywords, compiled into
//! the engine's [`LineOrder`] (Python speaks the same order as `emsort
//! sort` and `LC_ALL=C sort`).
//!
//! `sort`, `merge_files`, `Sorter` and `LineOrder` take them as `**order`
//! and parse them here, once: [`KEYWORDS`] names each (GNU's long option,
//! `-` as `_`) and what it sets; the Python package documents them as the
//! `TypedDict` `emsort.OrderOptions` (`python/emsort/_options.py`). A
//! keyword that is not one of them is a `TypeError` worded as Python's own.
//! `reverse` (`-r`) is a keyword of its own: every format takes it.
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
//! emsort.sort("events.jsonl", "by-ts.jsonl", jsonl=True, key=[".ts:n", ".user.id"])
//! ```

use std::io::Read;
use std::path::PathBuf;

use emsort_sort::keys::{JsonKey, Key, KeyKind, LineOrder, Locale, OrderOptions};
use emsort_sort::Format;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

/// What an ordering keyword sets.
#[derive(Clone, Copy, PartialEq)]
enum Opt {
    /// `-k`: a spec or a list of specs.
    Key,
    /// `-t`: one byte.
    FieldSeparator,
    /// A global flag, by GNU's letter (`numeric_sort`: `n`).
    Flag(char),
    /// `--random-source`: the file whose first 16 bytes salt `-R`.
    RandomSource,
    /// `-s`.
    Stable,
    /// `-u`.
    Unique,
    /// `-z`.
    ZeroTerminated,
    /// `--csv`.
    Csv,
    /// `--header`.
    Header,
    /// `--jsonl`: lines are JSON values, keys are paths (`".ts:n"`).
    Jsonl,
    /// The locale to order in: a name (`"en_US.UTF-8"`), `""` for the
    /// environment's as the command line takes it.
    Locale,
}

/// The ordering keywords of lines, in the order messages name them.
const KEYWORDS: [(&str, Opt); 20] = [
    ("key", Opt::Key),
    ("field_separator", Opt::FieldSeparator),
    ("ignore_leading_blanks", Opt::Flag('b')),
    ("dictionary_order", Opt::Flag('d')),
    ("ignore_case", Opt::Flag('f')),
    ("general_numeric_sort", Opt::Flag('g')),
    ("human_numeric_sort", Opt::Flag('h')),
    ("ignore_nonprinting", Opt::Flag('i')),
    ("month_sort", Opt::Flag('M')),
    ("numeric_sort", Opt::Flag('n')),
    ("random_sort", Opt::Flag('R')),
    ("random_source", Opt::RandomSource),
    ("version_sort", Opt::Flag('V')),
    ("stable", Opt::Stable),
    ("unique", Opt::Unique),
    ("zero_terminated", Opt::ZeroTerminated),
    ("csv", Opt::Csv),
    ("header", Opt::Header),
    ("jsonl", Opt::Jsonl),
    ("locale", Opt::Locale),
];

/// The ordering options of one call, parsed from its `**order`.
#[derive(Default)]
pub(crate) struct OrderArgs<'py> {
    /// `key`, checked when compiled (numbers and records refuse it first).
    key: Option<Bound<'py, PyAny>>,
    /// `field_separator`, checked when compiled.
    field_separator: Option<Bound<'py, PyAny>>,
    random_source: Option<PathBuf>,
    /// `locale`: `None` (the default) orders bytewise, as C.
    locale: Option<String>,
    /// The keywords given other than their default (`None`, `False`), as
    /// places in [`KEYWORDS`], in its order.
    given: Vec<usize>,
}

/// A compiled order, the byte that ends each line, and whether each
/// input starts with a header.
pub(crate) struct Lines {
    /// The order (keys, `-r`, `-s`, `-u`).
    pub order: LineOrder,
    /// `\n`, or NUL with `zero_terminated`.
    pub eol: u8,
    /// `header`.
    pub header: bool,
}

/// `value` as the type of argument `name` wants; a failure gets the note
/// PyO3 adds to its own argument errors ("while processing 'stable'").
fn extract<'py, T>(name: &str, value: &Bound<'py, PyAny>) -> PyResult<T>
where
    T: for<'a> FromPyObject<'a, 'py, Error = PyErr>,
{
    value.extract::<T>().inspect_err(|e| {
        // `add_note` exists from Python 3.11 on; the error stands without it.
        let _ = e.value(value.py()).call_method1("add_note", (format!("while processing '{name}'"),));
    })
}

impl<'py> OrderArgs<'py> {
    /// Parses the `**order` of `function` (as Python names it in messages:
    /// `sort`, `Sorter.__new__`): a keyword that is not an ordering option,
    /// a flag that is not a `bool` and a `random_source` that is not a path
    /// are a `TypeError`.
    pub(crate) fn from_kwargs(function: &str, order: Option<&Bound<'py, PyDict>>) -> PyResult<Self> {
        let mut a = OrderArgs::default();
        for (name, value) in order.into_iter().flat_map(|d| d.iter()) {
            let name = name.cast_into::<PyString>()?;
            let name = name.to_str()?;
            let Some(i) = KEYWORDS.iter().position(|k| k.0 == name) else {
                return Err(PyTypeError::new_err(format!(
                    "{function}() got an unexpected keyword argument '{name}'"
                )));
            };
            let set = match KEYWORDS[i].1 {
                Opt::Key => {
                    a.key = Some(value).filter(|v| !v.is_none());
                    a.key.is_some()
                }
                Opt::FieldSeparator => {
                    a.field_separator = Some(value).filter(|v| !v.is_none());
                    a.field_separator.is_some()
                }
                Opt::RandomSource => {
                    a.random_source = extract(name, &value)?;
                    a.random_source.is_some()
                }
                Opt::Locale => {
                    a.locale = extract(name, &value)?;
                    a.locale.is_some()
                }
                _ => extract::<bool>(name, &value)?,
            };
            if set {
                a.given.push(i);
            }
        }
        a.given.sort_unstable();
        Ok(a)
    }

    /// The keys and `unique` of a sort of tables (Parquet, Arrow): `key`
    /// names columns (`"ts"`, `"user:desc,nulls_first"`); the other
    /// ordering options order text lines and are refused (`stable` is
    /// accepted: a table sort is stable).
    pub(crate) fn table(&self) -> PyResult<(Vec<emsort_table::TableKey>, bool)> {
        let other: Vec<&str> = self
            .given
            .iter()
            .map(|&i| KEYWORDS[i])
            .filter(|k| !matches!(k.1, Opt::Key | Opt::Unique | Opt::Stable))
            .map(|k| k.0)
            .collect();
        if !other.is_empty() {
            return Err(PyValueError::new_err(format!(
                "{} order{} text lines, not tables (a table's key names columns: key=[\"ts\", \"user:desc\"])",
                other.join(", "),
                if other.len() == 1 { "s" } else { "" }
            )));
        }
        let keys = key_specs(self.key.as_ref())?
            .iter()
            .map(|k| emsort_table::TableKey::parse(k).map_err(PyValueError::new_err))
            .collect::<PyResult<Vec<_>>>()?;
        Ok((keys, self.on(Opt::Unique)))
    }

    /// Whether the option `opt` was given.
    fn on(&self, opt: Opt) -> bool {
        self.given.iter().any(|&i| KEYWORDS[i].1 == opt)
    }

    /// `ValueError` when ordering options were given for a format that is
    /// not `lines`.
    pub(crate) fn refuse(&self, format: Format) -> PyResult<()> {
        if self.given.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = self.given.iter().map(|&i| KEYWORDS[i].0).collect();
        Err(PyValueError::new_err(format!(
            "{} order{} text lines (format \"lines\"), not format {format}: numbers and records have \
             their own order (only reverse applies to them)",
            names.join(", "),
            if names.len() == 1 { "s" } else { "" }
        )))
    }

    /// The options as the command line gathers them, with `reverse` as
    /// the global `-r`; keys that name columns take them from `columns`
    /// (else none is taken).
    fn options(&self, py: Python<'_>, reverse: bool, columns: Option<&[Vec<u8>]>) -> PyResult<OrderOptions> {
        let mut o = OrderOptions::default();
        for &i in &self.given {
            if let Opt::Flag(letter) = KEYWORDS[i].1 {
                o.global.set_global(letter);
            }
        }
        if reverse {
            o.global.set_global('r');
        }
        for spec in key_specs(self.key.as_ref())? {
            // A JSON path (`--jsonl`'s), as the command line tells them.
            if JsonKey::is_path(&spec) {
                o.json_keys
                    .push(JsonKey::parse(&spec).map_err(|e| PyValueError::new_err(format!("key: {e}")))?);
                continue;
            }
            let key = match (self.names_column(&spec), columns) {
                (false, _) => Key::parse(&spec),
                (true, Some(cols)) => Key::parse_column(&spec, cols),
                (true, None) => continue,
            };
            o.keys.push(key.map_err(|e| PyValueError::new_err(format!("key: {e}")))?);
        }
        o.jsonl = self.on(Opt::Jsonl);
        o.tab = tab(self.field_separator.as_ref())?;
        o.csv = self.on(Opt::Csv);
        if o.csv && matches!(o.tab, Some(b'"' | b'\n' | b'\r')) {
            return Err(PyValueError::new_err("csv: a quote, CR or newline cannot separate fields"));
        }
        o.stable = self.on(Opt::Stable);
        o.unique = self.on(Opt::Unique);
        o.salt = salt(py, self.random_source.as_deref())?;
        o.locale = self.locale()?;
        Ok(o)
    }

    /// The locale of `locale`: `None` (the keyword's default, C, as
    /// Python's `sorted` orders), a name through [`Locale::named`], or
    /// `""`, the environment's ([`Locale::from_env`]: `LC_ALL`, else
    /// `LC_COLLATE` …, else `LANG`), as `emsort sort` takes it. A locale
    /// the C library cannot load is a `ValueError` naming it.
    fn locale(&self) -> PyResult<Option<Locale>> {
        match self.locale.as_deref() {
            None => Ok(None),
            Some("") => Locale::from_env().map_err(|e| {
                PyValueError::new_err(format!(
                    "locale \"\": the environment's ({}): {e}",
                    ["LC_ALL", "LC_COLLATE", "LANG"]
                        .iter()
                        .filter_map(|v| Some(format!("{v}={}", std::env::var(v).ok()?)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }),
            Some(name) => {
                Locale::named(name).map_err(|e| PyValueError::new_err(format!("locale {name:?}: {e}")))
            }
        }
    }

    /// Whether the key spec `spec` names a column (with `header`: GNU's
    /// start with a field number).
    fn names_column(&self, spec: &str) -> bool {
        self.on(Opt::Header) && !spec.starts_with(|c: char| c.is_ascii_digit()) && !JsonKey::is_path(spec)
    }

    /// The compiled order, `reverse` being the global `-r`; GNU's message
    /// as a `ValueError` for options that cannot go together. Keys that
    /// name columns take them from the header of `first`, the first input
    /// (`None`: no input to read one from, a `ValueError`).
    pub(crate) fn compile(
        &self,
        py: Python<'_>,
        reverse: bool,
        first: Option<&std::path::Path>,
    ) -> PyResult<Lines> {
        self.compile_with(py, reverse, first.map(Header::File))
    }

    /// [`OrderArgs::compile`], keys that name columns taking them from
    /// `header`: the first input's, or a header record given as is.
    pub(crate) fn compile_with(
        &self,
        py: Python<'_>,
        reverse: bool,
        first: Option<Header<'_>>,
    ) -> PyResult<Lines> {
        let eol = if self.on(Opt::ZeroTerminated) { 0 } else { b'\n' };
        let new = |o| LineOrder::new(o).map_err(PyValueError::new_err);
        let named = key_specs(self.key.as_ref())?.into_iter().find(|k| self.names_column(k));
        let order = match (named, first) {
            (None, _) => new(self.options(py, reverse, None)?)?,
            (Some(k), None) => {
                return Err(PyValueError::new_err(format!(
                    "key {k:?} names a column, but there is no input file to read the header from: \
                     give the column's number (\"3,3\")"
                )))
            }
            (Some(_), Some(Header::Record(record))) => {
                let records = new(self.options(py, false, None)?)?;
                let columns = records.columns(record.strip_suffix(&[eol]).unwrap_or(record));
                new(self.options(py, reverse, Some(&columns))?)?
            }
            (Some(_), Some(Header::File(path))) => {
                let records = new(self.options(py, false, None)?)?;
                let err = |op, e| crate::error::io_error(py, &emsort_io::Error::from_io(op, path, e));
                let f = std::fs::File::open(path).map_err(|e| err("open", e))?;
                let record =
                    emsort_sort::header::first_record(&mut std::io::BufReader::new(f), eol, Some(&records))
                        .map_err(|e| err("read", e))?;
                let columns = records.columns(record.strip_suffix(&[eol]).unwrap_or(&record));
                new(self.options(py, reverse, Some(&columns))?)?
            }
        };
        Ok(Lines { order, eol, header: self.on(Opt::Header) })
    }
}

/// Where keys that name columns find the header.
#[derive(Clone, Copy)]
pub(crate) enum Header<'a> {
    /// The first record of this file.
    File(&'a std::path::Path),
    /// This record (its terminator may follow).
    Record(&'a [u8]),
}

/// Whether any key of `order` shuffles (`-R`): two orders compiled apart
/// agree only when they share the salt.
pub(crate) fn shuffles(order: &LineOrder) -> bool {
    order.keys().iter().any(|k| k.kind() == KeyKind::Random)
}

/// The `-k` specs: none, one `str`, or a sequence of `str`.
fn key_specs(v: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let bad = |v: &Bound<'_, PyAny>| {
        PyTypeError::new_err(format!(
            "key must be a key spec such as \"3,3n\" (sort -k) or a list of them, not {}",
            v.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    };
    let Some(v) = v else {
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
    let Some(v) = v else {
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
