//! `-V`: version order, a port of gnulib's `filenvercmp` as GNU coreutils
//! 9.1 uses it (Debian's version comparison, after file suffixes
//! `(\.[A-Za-z~][A-Za-z0-9~]*)*$` are set aside for a second pass).

use std::cmp::Ordering;

/// The length of `s` without its file suffix.
fn prefix_len(s: &[u8]) -> usize {
    let n = s.len();
    let mut i = 0;
    loop {
        let prefix = i;
        while i + 1 < n && s[i] == b'.' && (s[i + 1].is_ascii_alphabetic() || s[i + 1] == b'~') {
            i += 2;
            while i < n && (s[i].is_ascii_alphanumeric() || s[i] == b'~') {
                i += 1;
            }
        }
        if i == n {
            return prefix;
        }
        i += 1;
    }
}

/// The weight of `s[pos]`: end before all but `~`, digits 0, letters
/// themselves, `~` lowest, other bytes after every letter.
fn order(s: &[u8], pos: usize) -> i32 {
    match s.get(pos) {
        None => -1,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => *c as i32,
        Some(b'~') => -2,
        Some(c) => *c as i32 + 256,
    }
}

fn verrevcmp(a: &[u8], b: &[u8]) -> i32 {
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let mut first_diff = 0i32;
        while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit()) {
            let (x, y) = (order(a, i), order(b, j));
            if x != y {
                return x - y;
            }
            i += 1;
            j += 1;
        }
        while i < a.len() && a[i] == b'0' {
            i += 1;
        }
        while j < b.len() && b[j] == b'0' {
            j += 1;
        }
        while i < a.len() && j < b.len() && a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            if first_diff == 0 {
                first_diff = a[i] as i32 - b[j] as i32;
            }
            i += 1;
            j += 1;
        }
        if i < a.len() && a[i].is_ascii_digit() {
            return 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            return -1;
        }
        if first_diff != 0 {
            return first_diff;
        }
    }
    0
}

/// Compares two version strings as `sort -V` does.
pub(crate) fn compare(a: &[u8], b: &[u8]) -> Ordering {
    if a.is_empty() || b.is_empty() {
        return (!a.is_empty()).cmp(&!b.is_empty());
    }
    if a[0] == b'.' {
        if b[0] != b'.' {
            return Ordering::Less;
        }
        let (adot, bdot) = (a.len() == 1, b.len() == 1);
        if adot || bdot {
            return bdot.cmp(&adot);
        }
        let (add, bdd) = (a == b"..", b == b"..");
        if add || bdd {
            return bdd.cmp(&add);
        }
    } else if b[0] == b'.' {
        return Ordering::Greater;
    }
    let (pa, pb) = (prefix_len(a), prefix_len(b));
    let one_pass = pa == a.len() && pb == b.len();
    let r = verrevcmp(&a[..pa], &b[..pb]);
    let r = if r != 0 || one_pass { r } else { verrevcmp(a, b) };
    r.cmp(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_versions_like_gnu() {
        let asc: [&[u8]; 12] = [
            b"",
            b".",
            b"..",
            b".a",
            b"1.0~rc1",
            b"1.0",
            b"1.0a",
            b"1.2",
            b"1.9",
            b"1.10",
            b"foo-1.2.tar.gz",
            b"foo-1.10.tar.gz",
        ];
        for w in asc.windows(2) {
            assert_eq!(compare(w[0], w[1]), Ordering::Less, "{:?} {:?}", w[0], w[1]);
        }
        assert_eq!(compare(b"1.01", b"1.1"), Ordering::Equal);
    }
}
