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
            let mut buf = vec![0u8; CHUNK.div_ceil(size) * size];
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
        let orig = original.map(|o| s.spawn(move || fingerprint_file(o, format, cancel)));
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
