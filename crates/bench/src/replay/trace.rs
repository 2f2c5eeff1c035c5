//! Traces: the read calls of a workload, one `file,offset,size` per line.
//!
//! The thesis recorded every read call of the Carmenta engine into CSV files
//! and replayed them with each reader (§3.4). A [`Trace`] is such a list:
//!
//! ```text
//! # comments start with '#' (a whole line); blank lines are skipped
//! file,offset,size
//! ct_000.bin,1048576,4096
//! ct_003.bin,0,131072
//! /data/maps/tile.bin,8192,8192
//! ```
//!
//! - The header line `file,offset,size` is optional (first line that is not
//!   a comment or blank).
//! - `file` is a path, relative to the trace's own directory unless
//!   absolute. The last two commas separate the fields, so a file name may
//!   itself hold commas; surrounding spaces are trimmed.
//! - `offset` and `size` are bytes, as plain decimal integers; `size` is at
//!   most [`MAX_REQUEST`] (each request needs a buffer of its size).
//!
//! A malformed line is an [`Error::Params`] naming the trace file and the
//! line (counted from 1). Parsing does not open the data files;
//! [`Trace::check_files`] does (a missing file is an
//! [`emsort_io::ErrorKind::NotFound`] naming it).
//!
//! ```
//! use emsort_bench::replay::Trace;
//! let t = Trace::parse("file,offset,size\na.bin,0,4096\nb.bin,8192,65536\n", "/d/t.csv".as_ref())?;
//! assert_eq!(t.requests().len(), 2);
//! assert_eq!(t.files()[1], std::path::Path::new("/d/b.bin"));
//! assert_eq!(t.bytes(), 69632);
//! assert!((t.large_share() - 65536.0 / 69632.0).abs() < 1e-12);
//! # Ok::<(), emsort_bench::Error>(())
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Requests larger than this are "large": the thesis' mmap threshold
/// (32 KiB, §4.7); a trace's [`Trace::large_share`] is the share of its
/// bytes in such requests.
pub const LARGE_REQUEST: u64 = 32 << 10;

/// The largest request a trace may hold: 1 GiB.
pub const MAX_REQUEST: u64 = 1 << 30;

/// The header line a trace may start with.
pub const HEADER: &str = "file,offset,size";

/// One read call of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Index into [`Trace::files`].
    pub file: usize,
    /// Byte offset of the first byte read.
    pub offset: u64,
    /// Bytes asked for.
    pub size: u64,
}

/// A list of read calls over a set of files (see the [module docs](self)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    path: PathBuf,
    files: Vec<PathBuf>,
    requests: Vec<Request>,
}

impl Trace {
    /// Reads and parses the trace file at `path`.
    pub fn read(path: &Path) -> Result<Trace> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
        Trace::parse(&text, path)
    }

    /// Parses trace text; `path` names the trace in errors and its directory
    /// anchors relative file names.
    pub fn parse(text: &str, path: &Path) -> Result<Trace> {
        let base = path.parent().unwrap_or(Path::new(""));
        let mut trace = Trace { path: path.to_path_buf(), ..Trace::default() };
        let mut index: HashMap<PathBuf, usize> = HashMap::new();
        let mut seen_data = false;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |msg: String| Error::Params { path: path.to_path_buf(), line: i + 1, msg };
            if !seen_data {
                seen_data = true;
                let fields: Vec<String> = line.split(',').map(|f| f.trim().to_ascii_lowercase()).collect();
                if fields.join(",") == HEADER {
                    continue;
                }
            }
            let mut it = line.rsplitn(3, ',');
            let (size, offset, file) = match (it.next(), it.next(), it.next()) {
                (Some(s), Some(o), Some(f)) => (s.trim(), o.trim(), f.trim()),
                _ => {
                    return Err(bad(format!("expected 'file,offset,size', found '{line}'")));
                }
            };
            if file.is_empty() {
                return Err(bad("empty file name".into()));
            }
            let offset: u64 = offset
                .parse()
                .map_err(|_| bad(format!("offset '{offset}' is not a whole number of bytes")))?;
            let size: u64 =
                size.parse().map_err(|_| bad(format!("size '{size}' is not a whole number of bytes")))?;
            if size > MAX_REQUEST {
                return Err(bad(format!(
                    "size {size} is larger than the largest request, {MAX_REQUEST} bytes"
                )));
            }
            if offset.checked_add(size).is_none() {
                return Err(bad(format!("offset {offset} + size {size} overflows")));
            }
            let p = base.join(file);
            let n = index.len();
            let id = *index.entry(p.clone()).or_insert(n);
            if id == trace.files.len() {
                trace.files.push(p);
            }
            trace.requests.push(Request { file: id, offset, size });
        }
        Ok(trace)
    }

    /// A trace from parts (for generated traces); `path` is where it will
    /// be written.
    pub fn from_parts(path: &Path, files: Vec<PathBuf>, requests: Vec<Request>) -> Trace {
        debug_assert!(requests.iter().all(|r| r.file < files.len()));
        Trace { path: path.to_path_buf(), files, requests }
    }

    /// The trace file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The files read, in order of first appearance, resolved against the
    /// trace's directory.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The read calls, in trace order.
    pub fn requests(&self) -> &[Request] {
        &self.requests
    }

    /// Bytes asked for by all requests.
    pub fn bytes(&self) -> u64 {
        self.requests.iter().map(|r| r.size).sum()
    }

    /// Bytes asked for by requests larger than [`LARGE_REQUEST`].
    pub fn large_bytes(&self) -> u64 {
        self.requests.iter().filter(|r| r.size > LARGE_REQUEST).map(|r| r.size).sum()
    }

    /// The share of bytes in requests larger than [`LARGE_REQUEST`] (0 for
    /// an empty trace), a property of the trace: 9.2 % for the thesis' CT
    /// workload, 99.8 % for AM, 0.6 % for IM.
    pub fn large_share(&self) -> f64 {
        match self.bytes() {
            0 => 0.0,
            b => self.large_bytes() as f64 / b as f64,
        }
    }

    /// The largest request, in bytes.
    pub fn max_request(&self) -> u64 {
        self.requests.iter().map(|r| r.size).max().unwrap_or(0)
    }

    /// Checks that every file exists, is a regular file and can be opened;
    /// returns their sizes. The error names the file and the trace.
    pub fn check_files(&self) -> Result<Vec<u64>> {
        self.files
            .iter()
            .map(|p| {
                let f = std::fs::File::open(p).map_err(|e| Error::io("open", p, e))?;
                let md = f.metadata().map_err(|e| Error::io("fstat", p, e))?;
                if md.is_dir() {
                    return Err(Error::Io(emsort_io::Error::new(emsort_io::ErrorKind::IsADirectory, p)));
                }
                Ok(md.len())
            })
            .collect()
    }

    /// The trace as text: the header, then a line per request, file names
    /// relative to `dir` when they are inside it. `comments` are written
    /// first, each prefixed with `# `.
    pub fn to_text(&self, dir: &Path, comments: &[String]) -> String {
        let names: Vec<String> = self
            .files
            .iter()
            .map(|p| match p.strip_prefix(dir) {
                // `dir` itself: `.`, not an empty name (which does not parse).
                Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
                // `dir` itself: `.`, not an empty name (which does not parse).
                Ok(rel) => rel.to_string_lossy().into_owned(),
                Err(_) => p.to_string_lossy().into_owned(),
            })
            .collect();
        let mut s = String::with_capacity(self.requests.len() * 32);
        for c in comments {
            let _ = writeln!(s, "# {c}");
        }
        s.push_str(HEADER);
        s.push('\n');
        for r in &self.requests {
            let _ = writeln!(s, "{},{},{}", names[r.file], r.offset, r.size);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comments_header_and_paths() {
        let text = "# a trace\n\n  FILE, offset , size\na.bin,0,4096\n# mid comment\n sub/b.bin , 10 , 20 \n\
                    /abs/c,d.bin,5,6\na.bin,4096,0\n";
        let t = Trace::parse(text, Path::new("/t/trace.csv")).unwrap();
        assert_eq!(
            t.files(),
            [PathBuf::from("/t/a.bin"), PathBuf::from("/t/sub/b.bin"), PathBuf::from("/abs/c,d.bin")]
        );
        assert_eq!(
            t.requests(),
            [
                Request { file: 0, offset: 0, size: 4096 },
                Request { file: 1, offset: 10, size: 20 },
                Request { file: 2, offset: 5, size: 6 },
                Request { file: 0, offset: 4096, size: 0 },
            ]
        );
        assert_eq!(t.bytes(), 4122);
        assert_eq!(t.large_bytes(), 0);
        assert_eq!(t.max_request(), 4096);
    }

    #[test]
    fn header_is_optional_and_only_first() {
        let t = Trace::parse("a,1,2\n", Path::new("t.csv")).unwrap();
        assert_eq!(t.requests().len(), 1);
        assert_eq!(t.files()[0], PathBuf::from("a"));
        let e = Trace::parse("a,1,2\nfile,offset,size\n", Path::new("t.csv")).unwrap_err();
        assert_eq!(e.to_string(), "t.csv:2: offset 'offset' is not a whole number of bytes");
        assert_eq!(Trace::parse("# only\n\n", Path::new("t.csv")).unwrap().requests().len(), 0);
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let cases = [
            ("file,offset,size\na,1\n", "x/t.csv:2: expected 'file,offset,size', found 'a,1'"),
            ("a,1,2\n#\n,1,2\n", "x/t.csv:3: empty file name"),
            ("a,-1,2\n", "x/t.csv:1: offset '-1' is not a whole number of bytes"),
            ("a,1,4K\n", "x/t.csv:1: size '4K' is not a whole number of bytes"),
            ("a,1,2000000000\n", "x/t.csv:1: size 2000000000 is larger than the largest request"),
            ("a,18446744073709551615,2\n", "x/t.csv:1: offset 18446744073709551615 + size 2 overflows"),
        ];
        for (text, want) in cases {
            let e = Trace::parse(text, Path::new("x/t.csv")).unwrap_err();
            assert!(matches!(e, Error::Params { .. }), "{e:?}");
            assert!(e.to_string().starts_with(want), "{e} vs {want}");
        }
    }

    #[test]
    fn large_share_counts_requests_over_32k() {
        let text = "a,0,32768\na,0,32769\na,0,0\n";
        let t = Trace::parse(text, Path::new("t.csv")).unwrap();
        assert_eq!(t.large_bytes(), 32769);
        assert!((t.large_share() - 32769.0 / 65537.0).abs() < 1e-12);
        assert_eq!(Trace::default().large_share(), 0.0);
    }

    #[test]
    fn text_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.csv");
        let files = vec![PathBuf::from("/elsewhere/b.bin"), dir.path().join("a.bin")];
        let reqs = vec![Request { file: 0, offset: 3, size: 4 }, Request { file: 1, offset: 0, size: 9 }];
        let t = Trace::from_parts(&path, files, reqs);
        let text = t.to_text(dir.path(), &["made by a test".into()]);
        assert!(text.starts_with("# made by a test\nfile,offset,size\n/elsewhere/b.bin,3,4\na.bin,0,9\n"));
        std::fs::write(&path, &text).unwrap();
        assert_eq!(Trace::read(&path).unwrap(), t);
        let e = t.check_files().unwrap_err();
        assert!(e.to_string().contains("/elsewhere/b.bin: no such file"), "{e}");
    }
}

/// Fuzz tests of trace text (`PROPTEST_CASES=20000 cargo test -p emsort-bench fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::fuzz::{check_error, text};
    use emsort_io::test_util::{cases, within};
    use proptest::prelude::*;

    const DIR: &str = "/d";

    /// File names: plain, with commas and spaces inside, absolute, `.` and
    /// `..` parts, unicode.
    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => "[a-z]{1,6}(\\.bin)?",
            1 => prop::sample::select(vec![
                "a,b.bin", "x y", "sub/c.bin", "./a", "sub/../a", "/abs/f", "/d/in.bin", "é.bin", "a\rb", "f#1",
                "file", "FILE", "..", "a/", "sub//b", ".", "./", "/d",
            ]).prop_map(String::from),
        ]
    }

    /// An offset and size that fit, at the edges too.
    fn request() -> impl Strategy<Value = (u64, u64)> {
        let size = prop_oneof![0u64..70_000, Just(MAX_REQUEST), Just(LARGE_REQUEST), Just(LARGE_REQUEST + 1)];
        (size, prop_oneof![any::<u64>(), 0u64..1 << 40]).prop_map(|(s, o)| (o.min(u64::MAX - s), s))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(512)))]

        /// Any text: a trace or an error naming a line, never a panic; a
        /// trace holds only requests that fit, and prints to text that
        /// parses back to it.
        #[test]
        fn fuzz_trace_any_text(s in prop_oneof![
            any::<String>(),
            text(&["file,offset,size", "a.bin", "b", ",", ",", ",", "\n", "\n", "4096", "0", "1073741824",
                   "1073741825", "# c", " ", "-1", "4K", "/abs", "."], 24),
        ]) {
            let path = Path::new("/d/trace.csv");
            match within(&s, || Trace::parse(&s, path)) {
                Ok(t) => {
                    prop_assert!(t.requests().iter().all(|r| r.file < t.files().len()
                        && r.size <= MAX_REQUEST && r.offset.checked_add(r.size).is_some()));
                    prop_assert_eq!(t.bytes(), t.requests().iter().map(|r| r.size).sum::<u64>());
                    let share = t.large_share();
                    prop_assert!((0.0..=1.0).contains(&share));
                    let again = Trace::parse(&t.to_text(Path::new(DIR), &["again".into()]), path);
                    prop_assert_eq!(again.as_ref().ok(), Some(&t), "{:?}", again);
                }
                Err(e) => check_error(&e, &s)?,
            }
        }

        /// Lines of known requests, between comments, blank lines and an
        /// optional header: exactly those requests, files numbered in order
        /// of first appearance; or, with a request too large or past 2⁶⁴,
        /// an error on its line.
        #[test]
        fn fuzz_trace_known_lines(reqs in prop::collection::vec((name(), request(), 0u8..8), 0..20),
                                  header: bool, pad: bool, bad in prop::option::of((0usize..20, any::<bool>()))) {
            let mut lines = vec!["# made by a test".to_string()];
            if header {
                lines.push(if pad { " File , OFFSET,size " } else { HEADER }.to_string());
            }
            let mut files: Vec<PathBuf> = Vec::new();
            let mut want = Vec::new();
            let mut bad_line = None;
            for (i, (name, (offset, size), extra)) in reqs.iter().enumerate() {
                if *extra == 0 {
                    lines.push(String::new());
                } else if *extra == 1 {
                    lines.push("  # comment, 1, 2".into());
                }
                let (offset, size) = match bad {
                    Some((at, too_large)) if at == i => {
                        bad_line = Some(lines.len() + 1);
                        let size = (*size).max(1);
                        if too_large { (*offset, MAX_REQUEST + size) } else { (u64::MAX - size + 1, size) }
                    }
                    _ => (*offset, *size),
                };
                lines.push(if pad { format!(" {name} , {offset} ,{size}\t") } else { format!("{name},{offset},{size}") });
                let p = Path::new(DIR).join(name.trim());
                let id = files.iter().position(|f| *f == p).unwrap_or_else(|| {
                    files.push(p);
                    files.len() - 1
                });
                want.push(Request { file: id, offset, size });
            }
            let text = lines.join("\n");
            let got = within(&text, || Trace::parse(&text, Path::new("/d/t.csv")));
            match bad_line {
                None => {
                    let t = got.unwrap();
                    prop_assert_eq!(t.requests(), &want[..]);
                    prop_assert_eq!(t.files(), &files[..]);
                    let again = Trace::parse(&t.to_text(Path::new(DIR), &[]), Path::new("/d/t.csv"));
                    prop_assert_eq!(again.as_ref().ok(), Some(&t), "{:?}", again);
                }
                Some(line) => match got {
                    Err(Error::Params { line: l, .. }) => prop_assert_eq!(l, line),
                    other => prop_assert!(false, "{:?}", other),
                },
            }
        }
    }

    /// Inputs the fuzz tests found, kept as plain regression tests.
    #[test]
    fn fuzz_regressions() {
        // A request of the trace's own directory (`.`) printed as an empty
        // name, which does not parse back.
        let path = Path::new("/d/t.csv");
        let t = Trace::parse(".,0,1\n", path).unwrap();
        assert_eq!(Trace::parse(&t.to_text(Path::new("/d"), &[]), path).unwrap(), t);
    }
}
