//! Where a key lies in a line: GNU `sort`'s `begfield` and `limfield`.
//!
//! Fields are separated by the `-t` byte (each separator ends a field, so
//! `a,,b` has an empty second field), or without `-t` by the transition
//! from a non-blank to a blank: each field then *includes* the blanks that
//! precede it (` a  b` has fields ` a` and `  b`), which is why `-b` matters
//! so often. Blanks are space, tab and newline (newline can occur with
//! `-z`). A key's start is field `sword` (0-based) plus `schar` bytes,
//! clamped to the line's end; its end is just past field `eword`, or
//! `echar` bytes into that field, clamped to the line's end (GNU does not
//! clamp it to the field's end). Positions are byte offsets into the line,
//! which has no terminator.

use super::Key;

/// Space, tab and newline: GNU's `field_sep` in the C locale.
#[inline]
pub(crate) fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n')
}

/// The start of `key` in `line` (`begfield`); for a key that starts at the
/// line's start (`sword` none), the start after blanks when the key skips
/// them.
pub(crate) fn key_start(line: &[u8], key: &Key, tab: Option<u8>) -> usize {
    let lim = line.len();
    let mut p = 0;
    match key.sword {
        Some(sword) => {
            let mut n = sword;
            match tab {
                Some(t) => {
                    while p < lim && n > 0 {
                        n -= 1;
                        while p < lim && line[p] != t {
                            p += 1;
                        }
                        if p < lim {
                            p += 1;
                        }
                    }
                }
                None => {
                    while p < lim && n > 0 {
                        n -= 1;
                        while p < lim && is_blank(line[p]) {
                            p += 1;
                        }
                        while p < lim && !is_blank(line[p]) {
                            p += 1;
                        }
                    }
                }
            }
            if key.skip_start_blanks {
                while p < lim && is_blank(line[p]) {
                    p += 1;
                }
            }
            lim.min(p.saturating_add(key.schar))
        }
        None => {
            if key.skip_start_blanks {
                while p < lim && is_blank(line[p]) {
                    p += 1;
                }
            }
            p
        }
    }
}

/// The end of `key` in `line` (`limfield`): one past its last byte.
pub(crate) fn key_end(line: &[u8], key: &Key, tab: Option<u8>) -> usize {
    let lim = line.len();
    let Some(eword) = key.eword else { return lim };
    let echar = key.echar;
    // echar 0: the whole of field eword.
    let mut n = if echar == 0 { eword.saturating_add(1) } else { eword };
    let mut p = 0;
    match tab {
        Some(t) => {
            while p < lim && n > 0 {
                n -= 1;
                while p < lim && line[p] != t {
                    p += 1;
                }
                if p < lim && (n > 0 || echar != 0) {
                    p += 1;
                }
            }
        }
        None => {
            while p < lim && n > 0 {
                n -= 1;
                while p < lim && is_blank(line[p]) {
                    p += 1;
                }
                while p < lim && !is_blank(line[p]) {
                    p += 1;
                }
            }
        }
    }
    if echar != 0 {
        if key.skip_end_blanks {
            while p < lim && is_blank(line[p]) {
                p += 1;
            }
        }
        p = lim.min(p.saturating_add(echar));
    }
    p
}

/// The bytes of `key` in `line`: empty when its end comes before its start.
#[inline]
pub(crate) fn key_bytes<'a>(line: &'a [u8], key: &Key, tab: Option<u8>) -> &'a [u8] {
    let start = key_start(line, key, tab);
    let end = key_end(line, key, tab).max(start);
    &line[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(spec: &str) -> Key {
        Key::parse(spec).unwrap()
    }

    #[test]
    fn fields_with_and_without_a_separator() {
        // Without -t a field includes the blanks before it.
        assert_eq!(key_bytes(b" a  b c", &k("2,2"), None), b"  b");
        assert_eq!(key_bytes(b" a  b c", &k("2b,2"), None), b"b");
        assert_eq!(key_bytes(b"a,,b", &k("2,2"), Some(b',')), b"");
        assert_eq!(key_bytes(b"a,,b", &k("3,3"), Some(b',')), b"b");
        assert_eq!(key_bytes(b"a,bc,d", &k("2"), Some(b',')), b"bc,d");
        assert_eq!(key_bytes(b"abcdef", &k("1.2,1.4"), None), b"bcd");
        // A start past the end: empty.
        assert_eq!(key_bytes(b"ab", &k("1.5,1.6"), None), b"");
        assert_eq!(key_bytes(b"a b", &k("3,3"), None), b"");
        // End before start: empty.
        assert_eq!(key_bytes(b"a b", &k("2,1"), None), b"");
        // ".0" at the end: to the end of that field.
        assert_eq!(key_bytes(b"ab cd ef", &k("1,2.0"), None), b"ab cd");
    }
}
