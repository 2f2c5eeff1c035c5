//! Checking a sorted file: order, and the same multiset as the original.
//!
//! [`verify`] streams FILE once in constant memory: it compares each item
//! with the previous one in the [`Format`]'s order (or its reverse) and
//! builds a [`Fingerprint`]. With an original file it fingerprints that too
//! and compares: equal fingerprints mean the same multiset of items.
//! For `lines`, a last line without `\n` counts as a line (as GNU `sort`
//! reads it), so a sorted file that added the final newline still matches.

use std::cmp::Ordering;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use emsort_io::{Error, ErrorKind};

use crate::{Fingerprint, Format};

/// Where a file first breaks the order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disorder {
    /// 0-based index of the item that is smaller (larger, with `reverse`)
    /// than the one before it.
    pub index: u64,
    /// Byte offset of that item in the file.
    pub offset: u64,
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// The file checked.
    pub path: PathBuf,
    /// Number of items in it.
    pub items: u64,
    /// The first place the order breaks, if any.
    pub disorder: Option<Disorder>,
    /// The file's multiset fingerprint.
    pub fingerprint: Fingerprint,
    /// The original's fingerprint, when one was given.
    pub original: Option<Fingerprint>,
}

impl VerifyReport {
    /// True when the file is in order and, if an original was given, holds
    /// the same multiset.
    pub fn ok(&self) -> bool {
        self.disorder.is_none() && self.same_multiset().unwrap_or(true)
    }

    /// Whether the multisets match, when an original was given.
    pub fn same_multiset(&self) -> Option<bool> {
        self.original.map(|o| o == self.fingerprint)
    }
}

const CHUNK: usize = 4 << 20;

/// Calls `f(item, offset)` for every item of `path` in `format`, streaming in
/// chunks of a few MiB. Fixed formats reject a size that is not a whole
/// number of items.
pub fn for_each_item(
    path: &Path,
    format: Format,
    cancel: &AtomicBool,
    mut f: impl FnMut(&[u8], u64),
) -> Result<(), Error> {
    let mut file = File::open(path).map_err(|e| Error::from_io("open", path, e))?;
    let md = file.metadata().map_err(|e| Error::from_io("fstat", path, e))?;
    if md.is_dir() {
        return Err(Error::new(ErrorKind::IsADirectory, path));
    }
    let interrupted = || Error::new(ErrorKind::Interrupted, path);
    match format.item_size() {
        Some(size) => {
            if md.len() % size as u64 != 0 {
                return Err(Error::new(ErrorKind::BadSize { size: md.len(), element_size: size }, path));
            }
            if md.len() == 0 {
                return Ok(());
            }
            // A few MiB of whole items, but no more than the file: a huge
            // record size (`rec:1099511627776:0:1`) on a small file must not
            // allocate the record.
            let file_len = usize::try_from(md.len()).unwrap_or(usize::MAX);
            let mut buf = vec![0u8; (CHUNK.div_ceil(size) * size).min(file_len)];
            let mut offset = 0u64;
            loop {
                let n = fill(&mut file, &mut buf).map_err(|e| Error::from_io("read", path, e))?;
                if n % size != 0 {
                    // The file changed size while we read it.
                    return Err(Error::new(
                        ErrorKind::BadSize { size: offset + n as u64, element_size: size },
                        path,
                    ));
                }
                for item in buf[..n].chunks_exact(size) {
                    f(item, offset);
                    offset += size as u64;
                }
                if n < buf.len() {
                    return Ok(());
                }
                if cancel.load(AtomicOrdering::Relaxed) {
                    return Err(interrupted());
                }
            }
        }
        None => {
            let mut buf = vec![0u8; CHUNK];
            let (mut start, mut end) = (0usize, 0usize); // unconsumed bytes buf[start..end]
            let mut offset = 0u64; // file offset of buf[start]
            loop {
                if start > 0 {
                    buf.copy_within(start..end, 0);
                    end -= start;
                    start = 0;
                }
                if end == buf.len() {
                    // A line longer than the buffer: grow it.
                    buf.resize(buf.len() * 2, 0);
                }
                let n = fill(&mut file, &mut buf[end..]).map_err(|e| Error::from_io("read", path, e))?;
                let at_eof = n < buf.len() - end;
                end += n;
                while let Some(nl) = buf[start..end].iter().position(|&b| b == b'\n') {
                    f(&buf[start..start + nl], offset);
                    offset += nl as u64 + 1;
                    start += nl + 1;
                }
                if at_eof {
                    if start < end {
                        f(&buf[start..end], offset);
                    }
                    return Ok(());
                }
                if cancel.load(AtomicOrdering::Relaxed) {
                    return Err(interrupted());
                }
            }
        }
    }
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn fill(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Fingerprints every item of `path` in `format`.
pub fn fingerprint_file(path: &Path, format: Format, cancel: &AtomicBool) -> Result<Fingerprint, Error> {
    let mut fp = Fingerprint::default();
    for_each_item(path, format, cancel, |item, _| fp.add(item))?;
    Ok(fp)
}

/// Checks that `path` is sorted in `format`'s order (descending with
/// `reverse`) and, with `original`, that it holds the same multiset.
pub fn verify(
    path: &Path,
    format: Format,
    reverse: bool,
    original: Option<&Path>,
    cancel: &AtomicBool,
) -> Result<VerifyReport, Error> {
    let bad = if reverse { Ordering::Greater } else { Ordering::Less };
    // The original's fingerprint is made on another thread while this one
    // checks the order: two sequential streams, two cores.
    std::thread::scope(|s| {
        let orig = original
            .map(|o| {
                emsort_io::spawn_scoped(s, "emsort-fingerprint", o, move || {
                    fingerprint_file(o, format, cancel)
                })
            })
            .transpose()?;
        let mut prev: Vec<u8> = Vec::new();
        let mut fp = Fingerprint::default();
        let mut disorder = None;
        for_each_item(path, format, cancel, |item, offset| {
            if fp.count > 0 && disorder.is_none() && format.compare(item, &prev) == bad {
                disorder = Some(Disorder { index: fp.count, offset });
            }
            fp.add(item);
            prev.clear();
            prev.extend_from_slice(item);
        })?;
        let original = orig.map(|h| h.join().expect("fingerprint thread")).transpose()?;
        Ok(VerifyReport { path: path.to_path_buf(), items: fp.count, disorder, fingerprint: fp, original })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn u32s(xs: &[u32]) -> Vec<u8> {
        xs.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn finds_first_disorder_and_multiset_changes() {
        let d = tempfile::tempdir().unwrap();
        let no = AtomicBool::new(false);
        let sorted = write(d.path(), "s", &u32s(&[1, 2, 2, 9]));
        let orig = write(d.path(), "o", &u32s(&[9, 2, 1, 2]));
        let other = write(d.path(), "x", &u32s(&[9, 2, 1, 3]));
        let unsorted = write(d.path(), "u", &u32s(&[1, 5, 3, 9]));
        let r = verify(&sorted, Format::U32, false, Some(&orig), &no).unwrap();
        assert!(r.ok());
        assert_eq!(r.items, 4);
        let r = verify(&sorted, Format::U32, false, Some(&other), &no).unwrap();
        assert_eq!(r.same_multiset(), Some(false));
        assert!(!r.ok());
        let r = verify(&unsorted, Format::U32, false, None, &no).unwrap();
        assert_eq!(r.disorder, Some(Disorder { index: 2, offset: 8 }));
        let r = verify(&sorted, Format::U32, true, None, &no).unwrap();
        assert_eq!(r.disorder, Some(Disorder { index: 1, offset: 4 }));
    }

    #[test]
    fn lines_with_and_without_final_newline() {
        let d = tempfile::tempdir().unwrap();
        let no = AtomicBool::new(false);
        let a = write(d.path(), "a", b"b\n\na\n");
        let s = write(d.path(), "s", b"\na\nb\n");
        let r = verify(&s, Format::Lines, false, Some(&a), &no).unwrap();
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.items, 3);
        let a2 = write(d.path(), "a2", b"b\n\na");
        assert!(verify(&s, Format::Lines, false, Some(&a2), &no).unwrap().ok());
        let long: Vec<u8> = std::iter::repeat_n(b'z', CHUNK * 2 + 3).chain(*b"\na\n").collect();
        let l = write(d.path(), "l", &long);
        let r = verify(&l, Format::Lines, false, None, &no).unwrap();
        assert_eq!(r.disorder, Some(Disorder { index: 1, offset: CHUNK as u64 * 2 + 4 }));
    }

    #[test]
    fn rejects_bad_sizes_and_directories() {
        let d = tempfile::tempdir().unwrap();
        let no = AtomicBool::new(false);
        let p = write(d.path(), "odd", &[0u8; 10]);
        let e = verify(&p, Format::U64, false, None, &no).unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::BadSize { size: 10, element_size: 8 });
        assert!(e.to_string().contains("odd"));
        let e = verify(d.path(), Format::U32, false, None, &no).unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::IsADirectory);
        let e = verify(&d.path().join("missing"), Format::U32, false, None, &no).unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::NotFound);
    }
}

/// Fuzz tests: any file contents in every format family, against a naive
/// oracle (`PROPTEST_CASES=20000 cargo test -p emsort-sort fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use emsort_io::test_util::{cases, within};
    use proptest::prelude::*;

    /// Every format family, odd record sizes, and record sizes no file here
    /// can hold.
    fn format() -> impl Strategy<Value = Format> {
        let simple =
            "u32 i32 u64 i64 f32 f64 rec:1:0:1 rec:3:1:1 rec:5:0:5 rec:7:6:1 rec:12:2:3 lines lines lines";
        let huge = [format!("rec:{}:0:1", 1u64 << 40), format!("rec:{}:0:{}", usize::MAX, usize::MAX)];
        let specs: Vec<String> = simple.split(' ').map(String::from).chain(huge).collect();
        prop::sample::select(specs).prop_map(|s| s.parse().unwrap())
    }

    /// Bytes: any, or drawn from newlines, NUL, `\r`, bytes ≥ 0x80 and a
    /// few letters; empty, only newlines, or long lines too.
    fn contents() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            2 => any::<u8>(),
            3 => prop::sample::select(vec![b'\n', b'\n', 0, b'\r', 0x80, 0xff, b'a', b'b', b' ']),
        ];
        prop_oneof![
            8 => prop::collection::vec(byte, 0..600),
            1 => Just(Vec::new()),
            1 => (0usize..50).prop_map(|n| vec![b'\n'; n]),
            1 => (1usize..20_000, any::<u8>()).prop_map(|(n, b)| {
                let mut v = vec![b.max(b'\n' + 1); n];
                v.extend_from_slice(b"\nshort\n");
                v
            }),
        ]
    }

    /// Items of `data` in `format` with their offsets (lines without their
    /// `\n`; a last line without one counts); `None` for a size that is not
    /// a whole number of items.
    fn items(format: Format, data: &[u8]) -> Option<Vec<(&[u8], u64)>> {
        match format.item_size() {
            Some(s) if !data.len().is_multiple_of(s) => None,
            Some(s) => Some(data.chunks_exact(s).enumerate().map(|(i, c)| (c, (i * s) as u64)).collect()),
            None => {
                let mut v = Vec::new();
                let mut off = 0;
                for l in data.split(|&b| b == b'\n') {
                    v.push((l, off as u64));
                    off += l.len() + 1;
                }
                if data.is_empty() || data.ends_with(b"\n") {
                    v.pop();
                }
                Some(v)
            }
        }
    }

    /// `data` with its items in order (so that verify also says ok).
    fn sorted(format: Format, reverse: bool, data: &[u8]) -> Vec<u8> {
        let Some(mut v) = items(format, data) else { return data.to_vec() };
        v.sort_by(|a, b| if reverse { format.compare(b.0, a.0) } else { format.compare(a.0, b.0) });
        let sep: &[u8] = if format == Format::Lines { b"\n" } else { b"" };
        v.iter().flat_map(|(i, _)| i.iter().chain(sep)).copied().collect()
    }

    #[test]
    fn fuzz_verify_any_file() {
        let dir = tempfile::tempdir().unwrap();
        let (path, orig) = (dir.path().join("file"), dir.path().join("original"));
        let no = AtomicBool::new(false);
        proptest!(ProptestConfig::with_cases(cases(256)), |(format in format(), data in contents(),
                                                             presort in any::<bool>(), reverse in any::<bool>(),
                                                             original in 0u8..3)| {
            let data = if presort { sorted(format, reverse, &data) } else { data };
            std::fs::write(&path, &data).unwrap();
            let items = items(format, &data);
            // The original: the same items backwards (lines with or without
            // the final newline), or with one item changed.
            let original = match (&items, original) {
                (Some(v), 1 | 2) => {
                    let mut v: Vec<Vec<u8>> = v.iter().rev().map(|(i, _)| i.to_vec()).collect();
                    let size = format.item_size();
                    let changed = original == 2 && (!v.is_empty() || size.is_none_or(|s| s <= 64));
                    if changed {
                        match v.first_mut() {
                            Some(first) if size.is_none() => first.push(b'x'),
                            Some(first) => first[0] ^= 1,
                            None => v.push(vec![0; size.unwrap_or(0)]),
                        }
                    }
                    let sep: &[u8] = if size.is_none() { b"\n" } else { b"" };
                    let mut bytes: Vec<u8> = v.iter().flat_map(|i| i.iter().chain(sep)).copied().collect();
                    if size.is_none() && reverse && v.last().is_some_and(|l| !l.is_empty()) {
                        bytes.pop(); // a last line without its newline
                    }
                    std::fs::write(&orig, bytes).unwrap();
                    Some(!changed)
                }
                _ => None,
            };
            let got = within((format, &data), || {
                verify(&path, format, reverse, original.map(|_| orig.as_path()), &no)
            });
            let bad = if reverse { Ordering::Greater } else { Ordering::Less };
            match (got, items) {
                (Err(e), None) => {
                    let size = format.item_size().unwrap();
                    prop_assert_eq!(e.kind(), &ErrorKind::BadSize { size: data.len() as u64, element_size: size });
                }
                (Ok(r), Some(items)) => {
                    prop_assert_eq!(r.items, items.len() as u64);
                    let first = (1..items.len()).find(|&i| format.compare(items[i].0, items[i - 1].0) == bad);
                    let want = first.map(|i| Disorder { index: i as u64, offset: items[i].1 });
                    prop_assert_eq!(&r.disorder, &want);
                    prop_assert_eq!(r.same_multiset(), original);
                    if r.ok() {
                        // The naive oracle agrees: every neighbour in order.
                        prop_assert!(items.windows(2).all(|w| format.compare(w[1].0, w[0].0) != bad));
                    }
                    prop_assert_eq!(r.ok(), want.is_none() && original != Some(false));
                }
                (got, items) => prop_assert!(false, "{:?} for {:?} items", got, items.map(|v| v.len())),
            }
        });
    }

    /// Inputs the fuzz test found, kept as plain regression tests.
    #[test]
    fn fuzz_regressions() {
        let d = tempfile::tempdir().unwrap();
        let no = AtomicBool::new(false);
        let empty = d.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        // A record size no file here holds: the empty file is sorted, and
        // verifying it did not allocate one record (1 TiB, or usize::MAX
        // bytes: a capacity overflow panic).
        for spec in [format!("rec:{}:0:1", 1u64 << 40), format!("rec:{}:0:1", usize::MAX)] {
            let f: Format = spec.parse().unwrap();
            let r = verify(&empty, f, false, Some(&empty), &no).unwrap();
            assert!(r.ok() && r.items == 0, "{spec}: {r:?}");
            let small = d.path().join("small");
            std::fs::write(&small, b"abc").unwrap();
            let e = verify(&small, f, false, None, &no).unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::BadSize { size: 3, .. }), "{spec}: {e}");
        }
    }
}
