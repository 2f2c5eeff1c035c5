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
//!
//! [`key_start`] and [`key_end`] are GNU's scans (`--debug` marks keys
//! with them, and [`split_fields`] + [`key_range`] — one pass over the
//! line for every key, then constant time per key — are tested against
//! them).

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
    let p = skip_fields(line, key.sword.unwrap_or(0), tab, true);
    let p = if key.skip_start_blanks { skip_blanks(line, p) } else { p };
    match key.sword {
        Some(_) => line.len().min(p.saturating_add(key.schar)),
        None => p,
    }
}

/// The end of `key` in `line` (`limfield`): one past its last byte.
pub(crate) fn key_end(line: &[u8], key: &Key, tab: Option<u8>) -> usize {
    let Some(eword) = key.eword else { return line.len() };
    let echar = key.echar;
    // echar 0: the whole of field eword.
    if echar == 0 {
        return skip_fields(line, eword.saturating_add(1), tab, false);
    }
    let p = skip_fields(line, eword, tab, true);
    let p = if key.skip_end_blanks { skip_blanks(line, p) } else { p };
    line.len().min(p.saturating_add(echar))
}

/// The position after the first `n` fields of `line`, GNU's loop in
/// `begfield` and `limfield`; with `-t`, past the separator that ends the
/// last of them when `past_last_tab`.
fn skip_fields(line: &[u8], mut n: usize, tab: Option<u8>, past_last_tab: bool) -> usize {
    let lim = line.len();
    let mut p = 0;
    while p < lim && n > 0 {
        n -= 1;
        match tab {
            Some(t) => {
                while p < lim && line[p] != t {
                    p += 1;
                }
                if p < lim && (n > 0 || past_last_tab) {
                    p += 1;
                }
            }
            None => {
                p = skip_blanks(line, p);
                while p < lim && !is_blank(line[p]) {
                    p += 1;
                }
            }
        }
    }
    p
}

/// The first position from `p` on that is not a blank.
fn skip_blanks(line: &[u8], mut p: usize) -> usize {
    while p < line.len() && is_blank(line[p]) {
        p += 1;
    }
    p
}

/// The bytes of `key` in `line`: empty when its end comes before its start.
#[cfg(test)]
#[inline]
pub(crate) fn key_bytes<'a>(line: &'a [u8], key: &Key, tab: Option<u8>) -> &'a [u8] {
    let start = key_start(line, key, tab);
    let end = key_end(line, key, tab).max(start);
    &line[start..end]
}

/// How many fields of a line [`key_range`] needs to know the bounds of to
/// place `key`: the most `begfield`/`limfield` skip.
pub(crate) fn fields_needed(key: &Key) -> usize {
    let start = key.sword.unwrap_or(0);
    let end = match key.eword {
        None => 0,
        Some(e) if key.echar == 0 => e + 1,
        Some(e) => e,
    };
    start.max(end)
}

/// Where a line's first fields end, found in one pass: with `-t`, the
/// positions of the separators; without, the end of each field's
/// non-blank run. Up to `upto` of them (fewer when the line has fewer).
pub(crate) fn split_fields(line: &[u8], tab: Option<u8>, upto: usize, ends: &mut Vec<usize>) {
    ends.clear();
    if upto == 0 {
        return;
    }
    match tab {
        Some(t) => {
            // 16 bytes at a time: fields are short, shorter than memchr's
            // setup, and a byte loop mispredicts at every separator (twice
            // the time per line).
            let mut at = 0;
            while at < line.len() {
                let n = (line.len() - at).min(16);
                let mut hits = if n < 16 && line.len() >= 16 {
                    // The tail: the line's last 16 bytes, without those
                    // already seen (no copy into a padded block).
                    matches16(&line[line.len() - 16..], t) >> (16 - n)
                } else {
                    matches16(&line[at..at + n], t)
                };
                while hits != 0 {
                    ends.push(at + hits.trailing_zeros() as usize);
                    if ends.len() == upto {
                        return;
                    }
                    hits &= hits - 1;
                }
                at += n;
            }
        }
        None => {
            let lim = line.len();
            let mut p = 0;
            while ends.len() < upto {
                p = skip_blanks(line, p);
                if p == lim {
                    break;
                }
                while p < lim && !is_blank(line[p]) {
                    p += 1;
                }
                ends.push(p);
            }
        }
    }
}

/// Bit i set when `chunk[i] == t` (`chunk`: at most 16 bytes).
#[inline]
fn matches16(chunk: &[u8], t: u8) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
        let load = |p: *const u8| {
            // SAFETY: SSE2 is part of x86_64; callers pass 16 readable
            // bytes.
            unsafe { _mm_loadu_si128(p.cast::<__m128i>()) }
        };
        let v = if chunk.len() == 16 {
            load(chunk.as_ptr())
        } else {
            let mut block = [0u8; 16];
            block[..chunk.len()].copy_from_slice(chunk);
            load(block.as_ptr())
        };
        // SAFETY: SSE2 is part of x86_64.
        let m = unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(t as i8))) } as u32;
        m & (u32::MAX >> (32 - chunk.len()))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        chunk.iter().enumerate().fold(0, |m, (i, &b)| m | (((b == t) as u32) << i))
    }
}

/// The bytes of `key` in `line` as [`key_bytes`] finds them, from the
/// field ends [`split_fields`] found (at least [`fields_needed`] of them,
/// or all the line has): `begfield` and `limfield` in constant time.
#[inline]
pub(crate) fn key_range(line: &[u8], key: &Key, tab: Option<u8>, ends: &[usize]) -> (usize, usize) {
    let lim = line.len();
    // After skipping n fields: past the n-th separator (with -t), or at
    // the end of the n-th field's non-blank run.
    let after = |n: usize| -> usize {
        match n {
            0 => 0,
            n => match (ends.get(n - 1), tab) {
                (Some(&e), Some(_)) => e + 1,
                (Some(&e), None) => e,
                (None, _) => lim,
            },
        }
    };
    let start = match key.sword {
        Some(sword) => {
            let p = after(sword);
            let p = if key.skip_start_blanks { skip_blanks(line, p) } else { p };
            lim.min(p.saturating_add(key.schar))
        }
        None if key.skip_start_blanks => skip_blanks(line, 0),
        None => 0,
    };
    let end = match key.eword {
        None => lim,
        // The whole of field eword: up to its separator, not past it.
        Some(eword) if key.echar == 0 => ends.get(eword).copied().unwrap_or(lim),
        Some(eword) => {
            let p = after(eword);
            let p = if key.skip_end_blanks { skip_blanks(line, p) } else { p };
            lim.min(p.saturating_add(key.echar))
        }
    };
    (start, end.max(start))
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

    proptest::proptest! {
        /// The one-pass split finds every key where GNU's scans do.
        #[test]
        fn split_fields_place_keys_as_begfield_and_limfield(
            line in proptest::collection::vec(proptest::sample::select(vec![b' ', b'\t', b'\n', b',', b'a', b'b']), 0..40),
            sf in 1usize..5, sc in 1usize..4, end in proptest::option::of((1usize..5, 0usize..4)),
            mods in "b?", emods in "b?", tab: bool,
        ) {
            let mut spec = format!("{sf}.{sc}{mods}");
            if let Some((ef, ec)) = end {
                spec += &format!(",{ef}.{ec}{emods}");
            }
            let key = k(&spec);
            let tab = tab.then_some(b',');
            let mut ends = Vec::new();
            split_fields(&line, tab, fields_needed(&key), &mut ends);
            let (s, e) = key_range(&line, &key, tab, &ends);
            proptest::prop_assert_eq!(&line[s..e], key_bytes(&line, &key, tab), "{} {:?}", spec, line);
        }
    }
}
