//! Data formats and how their items compare.
//!
//! A [`Format`] says how a file splits into items and how two items
//! compare:
//!
//! | format | item | order |
//! |---|---|---|
//! | `u32`, `i32`, `u64`, `i64` | a native-endian integer | numeric |
//! | `f32`, `f64` | a native-endian IEEE float | total order: −∞ … −0 < +0 … +∞, then every NaN (NaNs last) |
//! | `rec:SIZE:KEY_OFFSET:KEY_LEN` | a record of SIZE bytes | bytewise on bytes `KEY_OFFSET..KEY_OFFSET+KEY_LEN` |
//! | `lines` | bytes up to a `\n` (a last line may lack it) | bytewise, as `LC_ALL=C sort` |
//!
//! ```
//! use emsort_sort::Format;
//! let f: Format = "rec:100:0:10".parse().unwrap();
//! assert_eq!(f.item_size(), Some(100));
//! assert_eq!(f.to_string(), "rec:100:0:10");
//! ```

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Fixed-size records compared bytewise on a key field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordFormat {
    /// Record size in bytes (≥ 1).
    pub size: usize,
    /// Offset of the key in the record.
    pub key_offset: usize,
    /// Length of the key in bytes (≥ 1, `key_offset + key_len ≤ size`).
    pub key_len: usize,
}

/// The layout and order of a data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Unsigned 32-bit integers (native byte order).
    U32,
    /// Signed 32-bit integers.
    I32,
    /// Unsigned 64-bit integers.
    U64,
    /// Signed 64-bit integers.
    I64,
    /// 32-bit floats, total order with NaNs last.
    F32,
    /// 64-bit floats, total order with NaNs last.
    F64,
    /// Fixed-size records with a bytewise key.
    Rec(RecordFormat),
    /// Newline-terminated text lines compared bytewise.
    Lines,
}

impl Format {
    /// Size in bytes of one item, `None` for `lines`.
    pub fn item_size(&self) -> Option<usize> {
        Some(match self {
            Format::U32 | Format::I32 | Format::F32 => 4,
            Format::U64 | Format::I64 | Format::F64 => 8,
            Format::Rec(r) => r.size,
            Format::Lines => return None,
        })
    }

    /// Compares two items given as their bytes (exactly `item_size` bytes for
    /// fixed formats; a line without its `\n` for `lines`).
    #[inline]
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        fn ne<const N: usize>(x: &[u8]) -> [u8; N] {
            x[..N].try_into().expect("item of the format's size")
        }
        match self {
            Format::U32 => u32::from_ne_bytes(ne(a)).cmp(&u32::from_ne_bytes(ne(b))),
            Format::I32 => i32::from_ne_bytes(ne(a)).cmp(&i32::from_ne_bytes(ne(b))),
            Format::U64 => u64::from_ne_bytes(ne(a)).cmp(&u64::from_ne_bytes(ne(b))),
            Format::I64 => i64::from_ne_bytes(ne(a)).cmp(&i64::from_ne_bytes(ne(b))),
            Format::F32 => f32_key(f32::from_ne_bytes(ne(a))).cmp(&f32_key(f32::from_ne_bytes(ne(b)))),
            Format::F64 => f64_key(f64::from_ne_bytes(ne(a))).cmp(&f64_key(f64::from_ne_bytes(ne(b)))),
            Format::Rec(r) => {
                let k = r.key_offset..r.key_offset + r.key_len;
                a[k.clone()].cmp(&b[k])
            }
            Format::Lines => a.cmp(b),
        }
    }
}

/// Maps an `f32` to a `u32` whose unsigned order is the total order with
/// every NaN last (all NaNs compare equal).
#[inline]
pub fn f32_key(x: f32) -> u32 {
    if x.is_nan() {
        return u32::MAX;
    }
    let b = x.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | (1 << 31)
    }
}

/// Maps an `f64` to a `u64` whose unsigned order is the total order with
/// every NaN last (all NaNs compare equal).
#[inline]
pub fn f64_key(x: f64) -> u64 {
    if x.is_nan() {
        return u64::MAX;
    }
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Format::U32 => f.write_str("u32"),
            Format::I32 => f.write_str("i32"),
            Format::U64 => f.write_str("u64"),
            Format::I64 => f.write_str("i64"),
            Format::F32 => f.write_str("f32"),
            Format::F64 => f.write_str("f64"),
            Format::Rec(r) => write!(f, "rec:{}:{}:{}", r.size, r.key_offset, r.key_len),
            Format::Lines => f.write_str("lines"),
        }
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        Ok(match s {
            "u32" => Format::U32,
            "i32" => Format::I32,
            "u64" => Format::U64,
            "i64" => Format::I64,
            "f32" => Format::F32,
            "f64" => Format::F64,
            "lines" => Format::Lines,
            _ if s.starts_with("rec:") => {
                let bad = || {
                    format!(
                        "invalid record format '{s}': expected rec:SIZE:KEY_OFFSET:KEY_LEN \
                         with KEY_LEN ≥ 1 and KEY_OFFSET + KEY_LEN ≤ SIZE (e.g. rec:100:0:10)"
                    )
                };
                let parts: Vec<&str> = s[4..].split(':').collect();
                if parts.len() != 3 {
                    return Err(bad());
                }
                let n: Vec<usize> =
                    parts.iter().map(|p| p.parse::<usize>().map_err(|_| bad())).collect::<Result<_, _>>()?;
                let r = RecordFormat { size: n[0], key_offset: n[1], key_len: n[2] };
                let key_end = r.key_offset.checked_add(r.key_len);
                if r.size == 0 || r.key_len == 0 || key_end.is_none_or(|end| end > r.size) {
                    return Err(bad());
                }
                Format::Rec(r)
            }
            _ => {
                return Err(format!(
                    "unknown format '{s}' (expected u32, i32, u64, i64, f32, f64, \
                     rec:SIZE:KEY_OFFSET:KEY_LEN or lines)"
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for s in ["u32", "i32", "u64", "i64", "f32", "f64", "lines", "rec:100:0:10", "rec:104:0:8"] {
            assert_eq!(s.parse::<Format>().unwrap().to_string(), s);
        }
        for bad in ["u16", "rec:10:5:6", "rec:0:0:0", "rec:10:0:0", "rec:10:0", "rec:a:0:1"] {
            assert!(bad.parse::<Format>().is_err(), "{bad}");
        }
    }

    #[test]
    fn float_keys_are_total_with_nans_last() {
        let xs = [f64::NEG_INFINITY, -1.5, -0.0, 0.0, 1e-300, 2.0, f64::INFINITY, f64::NAN, -f64::NAN];
        for w in xs.windows(2) {
            assert!(f64_key(w[0]) <= f64_key(w[1]), "{} {}", w[0], w[1]);
        }
        assert!(f64_key(-0.0) < f64_key(0.0));
        let ys = [f32::NEG_INFINITY, -3.0, -0.0, 0.0, 7.0, f32::INFINITY, f32::NAN];
        for w in ys.windows(2) {
            assert!(f32_key(w[0]) < f32_key(w[1]));
        }
        assert_eq!(f32_key(-f32::NAN), f32_key(f32::NAN));
    }

    #[test]
    fn compares_by_format() {
        let f = Format::I32;
        assert_eq!(f.compare(&(-1i32).to_ne_bytes(), &1i32.to_ne_bytes()), Ordering::Less);
        let r: Format = "rec:4:1:2".parse().unwrap();
        assert_eq!(r.compare(b"zabz", b"aacz"), Ordering::Less);
        assert_eq!(r.compare(b"zabz", b"aaba"), Ordering::Equal);
        assert_eq!(Format::Lines.compare(b"a", b"a\x80"), Ordering::Less);
        assert_eq!(Format::Lines.compare(b"", b"\0"), Ordering::Less);
    }
}

/// Fuzz tests of format specs, against an oracle that reads the numbers as
/// `u128` (`PROPTEST_CASES=20000 cargo test -p emsort-sort fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use emsort_io::test_util::{cases, within};
    use proptest::prelude::*;

    /// A number of a `rec:` spec: small, anywhere in a usize, at its edge,
    /// past it, or not a number at all.
    fn part() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => (0usize..20).prop_map(|n| n.to_string()),
            2 => any::<usize>().prop_map(|n| n.to_string()),
            2 => (0usize..3).prop_map(|d| (usize::MAX - d).to_string()),
            1 => (0usize..3).prop_map(|d| (usize::MAX / 2 + d).to_string()),
            2 => prop::sample::select(vec![
                "", "18446744073709551616", "340282366920938463463374607431768211456", "+3", "-1", " 3", "3 ",
                "３", "٣", "1e2", "0x10", "00010", "1_0", "é",
            ]).prop_map(String::from),
            1 => any::<String>(),
        ]
    }

    fn spec() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => (prop::sample::select(vec!["rec:", "rec:", "rec:", "REC:", "rec", "rec::", " rec:"]),
                  prop::collection::vec(part(), 0..5))
                .prop_map(|(head, parts)| format!("{head}{}", parts.join(":"))),
            1 => prop::sample::select(vec!["u32", "i32", "u64", "i64", "f32", "f64", "lines", "U32", "u32 ",
                                           "line", "", "rec"]).prop_map(String::from),
            1 => any::<String>(),
        ]
    }

    /// The oracle: what `s` means, computed in u128.
    fn oracle(s: &str) -> Option<Format> {
        let simple =
            [Format::U32, Format::I32, Format::U64, Format::I64, Format::F32, Format::F64, Format::Lines];
        if let Some(f) = simple.into_iter().find(|f| f.to_string() == s) {
            return Some(f);
        }
        let parts: Vec<u128> =
            s.strip_prefix("rec:")?.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
        let [size, off, len] = parts[..] else { return None };
        let fits = |x: u128| usize::try_from(x).ok();
        if size == 0 || len == 0 || off + len > size {
            return None;
        }
        Some(Format::Rec(RecordFormat { size: fits(size)?, key_offset: fits(off)?, key_len: fits(len)? }))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(1024)))]

        /// Any spec parses as the oracle says, or is a clean error; a parsed
        /// format prints back to itself and compares records of its size.
        #[test]
        fn fuzz_format_specs(s in spec(), a in prop::collection::vec(any::<u8>(), 64),
                             b in prop::collection::vec(any::<u8>(), 64)) {
            let got = within(&s, || s.parse::<Format>());
            prop_assert_eq!(got.clone().ok(), oracle(&s), "{:?}", s);
            match got {
                Ok(f) => {
                    prop_assert_eq!(f.to_string().parse::<Format>(), Ok(f));
                    if let Format::Rec(r) = f {
                        prop_assert_eq!(f.item_size(), Some(r.size));
                        if r.size <= 64 {
                            let k = r.key_offset..r.key_offset + r.key_len;
                            prop_assert_eq!(f.compare(&a[..r.size], &b[..r.size]), a[k.clone()].cmp(&b[k]));
                        }
                    }
                }
                Err(e) => prop_assert!(e.contains("format"), "{}", e),
            }
        }
    }

    /// Inputs the fuzz test found, kept as plain regression tests.
    #[test]
    fn fuzz_regressions() {
        // KEY_OFFSET + KEY_LEN overflowed a usize: a panic in debug builds,
        // and in release a wrapped sum that passed the check (then an
        // out-of-bounds slice in `compare`).
        let max = usize::MAX;
        for s in [format!("rec:10:{max}:1"), format!("rec:{max}:{max}:1"), format!("rec:{max}:1:{max}")] {
            assert!(s.parse::<Format>().is_err(), "{s}");
        }
        assert_eq!(format!("rec:{max}:0:{max}").parse::<Format>().unwrap().item_size(), Some(max));
    }
}
