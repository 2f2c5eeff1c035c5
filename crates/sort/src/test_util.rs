//! Helpers of the unit tests: the items and lines of a file's bytes, and
//! the check of a sorted output against `slice::sort_by`.

use std::cmp::Ordering;

use crate::Format;

/// The items of `bytes` in `format` (lines without their `\n`).
pub(crate) fn items(format: Format, bytes: &[u8]) -> Vec<Vec<u8>> {
    match format.item_size() {
        Some(s) => bytes.chunks_exact(s).map(|c| c.to_vec()).collect(),
        None => split_lines(bytes, b'\n').into_iter().map(<[u8]>::to_vec).collect(),
    }
}

/// The lines of `text` ended by `eol`, without it (a last one without it
/// too).
pub(crate) fn split_lines(text: &[u8], eol: u8) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = text.split(|&b| b == eol).collect();
    if text.last() == Some(&eol) || text.is_empty() {
        lines.pop();
    }
    lines
}

/// `lines`, each ended by `eol`.
pub(crate) fn joined(lines: &[&[u8]], eol: u8) -> Vec<u8> {
    lines.iter().flat_map(|l| l.iter().copied().chain([eol])).collect()
}

/// The output is the input sorted by `slice::sort_by` with the format's
/// order (up to the order of equal keys), and the same multiset.
pub(crate) fn check(format: Format, reverse: bool, input: &[u8], output: &[u8], what: &str) {
    let mut expect = items(format, input);
    expect.sort_by(|a, b| if reverse { format.compare(b, a) } else { format.compare(a, b) });
    let got = items(format, output);
    assert_eq!(got.len(), expect.len(), "{what}: item count");
    for (i, (g, e)) in got.iter().zip(&expect).enumerate() {
        assert_eq!(format.compare(g, e), Ordering::Equal, "{what}: item {i} differs in key");
    }
    let (mut a, mut b) = (got, expect);
    a.sort();
    b.sort();
    assert!(a == b, "{what}: not the same multiset");
}
