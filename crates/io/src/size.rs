//! Byte sizes with suffixes, as GNU `sort -S` takes them.
//!
//! `parse_size("64K")` is 65536: suffixes `b` (1), `K`, `M`, `G`, `T`, `P`
//! (powers of 1024, case-insensitive, an optional trailing `iB` or `B`); a bare
//! number is bytes. [`format_size`] prints a size back in the largest unit
//! that divides it evenly.

/// Parses a size such as `4`, `4096`, `64K`, `1M`, `1.5G`, `2GiB` into bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let err = || format!("invalid size '{s}' (expected a number with an optional K, M, G, T suffix)");
    let lower = t.to_ascii_lowercase();
    let body = lower.strip_suffix("ib").or_else(|| lower.strip_suffix('b')).unwrap_or(&lower);
    let (num, mult): (&str, u64) = match body.chars().last() {
        Some('k') => (&body[..body.len() - 1], 1 << 10),
        Some('m') => (&body[..body.len() - 1], 1 << 20),
        Some('g') => (&body[..body.len() - 1], 1 << 30),
        Some('t') => (&body[..body.len() - 1], 1 << 40),
        Some('p') => (&body[..body.len() - 1], 1 << 50),
        Some(c) if c.is_ascii_digit() || c == '.' => (body, 1),
        _ => return Err(err()),
    };
    if num.is_empty() {
        return Err(err());
    }
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mult).ok_or_else(err);
    }
    let f: f64 = num.parse().map_err(|_| err())?;
    if !f.is_finite() || f < 0.0 {
        return Err(err());
    }
    let v = f * mult as f64;
    // `u64::MAX as f64` is 2⁶⁴ (the nearest double), itself out of range:
    // `>` let 2⁶⁴ through, saturated to u64::MAX by the cast.
    if v >= u64::MAX as f64 {
        return Err(err());
    }
    Ok(v.round() as u64)
}

/// Parses a count of items: `1000000`, `1_000_000`, `1e6`, `2.5e3`, or a
/// binary multiple `1K`, `1M`, `1G` (2¹⁰, 2²⁰, 2³⁰). A count with a
/// fractional part (`1.5`) is refused.
///
/// ```
/// use emsort_io::parse_count;
/// assert_eq!(parse_count("1e6"), Ok(1_000_000));
/// assert_eq!(parse_count("2.5e3"), Ok(2500));
/// assert_eq!(parse_count("1M"), Ok(1 << 20));
/// assert_eq!(parse_count("0"), Ok(0));
/// assert!(parse_count("1.5").is_err());
/// ```
pub fn parse_count(s: &str) -> Result<u64, String> {
    if let Some(last) = s.trim().chars().last() {
        if last.is_ascii_alphabetic() && !matches!(last, 'e' | 'E') {
            // 1K, 1M, 1G: binary multiples, as sizes take them.
            return parse_size(s)
                .map_err(|_| format!("invalid count '{}': expected e.g. 1000000, 1e6 or 1M", s.trim()));
        }
    }
    let t = s.trim().replace('_', "");
    let err = |why: &str| format!("invalid count '{}': {why}", s.trim());
    if t.is_empty() {
        return Err(err("empty"));
    }
    let (mant, exp) = match t.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<u32>().map_err(|_| err("bad exponent"))?),
        None => (t.as_str(), 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let frac = frac.trim_end_matches('0');
    if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return Err(err("expected digits, optionally with an exponent such as 1e6"));
    }
    let digits: u64 = format!("{int}{frac}").parse().map_err(|_| err("too large"))?;
    let shift = exp.checked_sub(frac.len() as u32).ok_or_else(|| err("not a whole number"))?;
    if digits == 0 {
        return Ok(0); // 0e30 is 0, though 10³⁰ is not a u64
    }
    let n = 10u64.checked_pow(shift).and_then(|p| digits.checked_mul(p)).ok_or_else(|| err("too large"))?;
    Ok(n)
}

/// Formats `bytes` with the largest binary unit that divides it evenly
/// (`65536` → `64K`, `1000` → `1000`).
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(50, "P"), (40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_suffixes() {
        assert_eq!(parse_size("4").unwrap(), 4);
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("64k").unwrap(), 65536);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert_eq!(parse_size("100b").unwrap(), 100);
        assert!(parse_size("").is_err());
        assert!(parse_size("K").is_err());
        assert!(parse_size("12X").is_err());
        assert!(parse_size("-1K").is_err());
        assert!(parse_size("99999999999P").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for b in [1u64, 4, 1000, 4096, 65536, 3 << 20, 1 << 30] {
            assert_eq!(parse_size(&format_size(b)).unwrap(), b);
        }
        assert_eq!(format_size(65536), "64K");
    }
}

/// Fuzz tests: arbitrary and near-valid text, with exact oracles where the
/// value is known (`PROPTEST_CASES=20000 cargo test -p emsort-io fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::test_util::{cases, within};
    use proptest::prelude::*;

    const UNITS: [(&str, u32); 6] = [("", 0), ("K", 10), ("M", 20), ("G", 30), ("T", 40), ("P", 50)];

    /// Pieces of size and count strings, good and bad, joined at random.
    fn near_valid() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            4 => "[0-9]{1,25}",
            1 => prop::sample::select(vec![
                "k", "K", "m", "M", "g", "G", "t", "T", "p", "P", "b", "B", "iB", "ib", "KiB", "e", "E", ".",
                "_", "-", "+", " ", "\t", "\n", "x", "é", "ℹ", "K\u{301}", "٣", "１", "inf", "NaN", "0x",
                "18446744073709551615", "18446744073709551616", "16384", "1e400", "e-3", "\u{0}",
            ]).prop_map(String::from),
            1 => any::<char>().prop_map(String::from),
        ];
        prop::collection::vec(piece, 0..6).prop_map(|v| v.concat())
    }

    /// Numbers at the edges of a unit's range (around 2⁶⁴ / unit, past
    /// 2⁶⁴ − 1 too) and anywhere.
    fn number_for(shift: u32) -> impl Strategy<Value = u128> {
        let edge = 1u128 << (64 - shift);
        prop_oneof![
            0u128..5000,
            any::<u64>().prop_map(u128::from),
            (0u128..4).prop_map(move |d| edge - 1 - d),
            (0u128..4).prop_map(move |d| edge + d),
            (1u128 << 64..1 << 70),
        ]
    }

    /// An integer with a unit, in any case and suffix form, maybe padded;
    /// and its value when it fits in a u64.
    fn integer_with_unit() -> impl Strategy<Value = (String, Option<u64>)> {
        (0..UNITS.len())
            .prop_flat_map(|u| (Just(u), number_for(UNITS[u].1), 0usize..4, any::<bool>(), any::<bool>()))
            .prop_map(|(u, n, form, lower, pad)| {
                let (unit, shift) = UNITS[u];
                let suffix = match (unit, form) {
                    ("", 1) => "b".to_string(),
                    ("", 2) => "B".to_string(),
                    (_, 1) => format!("{unit}B"),
                    (_, 2) => format!("{unit}iB"),
                    _ => unit.to_string(),
                };
                let suffix = if lower { suffix.to_lowercase() } else { suffix };
                let s = if pad { format!(" \t{n}{suffix} ") } else { format!("{n}{suffix}") };
                (s, u64::try_from(n << shift).ok().filter(|_| n < 1 << 64))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(512)))]

        /// Any text: a value or a clean error, never a panic.
        #[test]
        fn fuzz_parse_size_any_text(s in prop_oneof![any::<String>(), near_valid()]) {
            let _ = within(&s, || parse_size(&s));
            let _ = within(&s, || parse_count(&s));
        }

        /// `N` + unit: exactly N × unit, or an error when that overflows.
        #[test]
        fn fuzz_parse_size_integers((s, want) in integer_with_unit()) {
            prop_assert_eq!(within(&s, || parse_size(&s)).ok(), want, "{:?}", s);
        }

        /// `W.F` + unit, where F is a binary fraction the unit makes whole:
        /// exactly W × unit + F × unit while that is a double (< 2⁵³),
        /// within a double's rounding above, and an error from 2⁶⁴ on
        /// (never a saturated u64::MAX).
        #[test]
        fn fuzz_parse_size_fractions(u in 1..UNITS.len(), w_small in 0u64..1 << 20, edge: bool, d in 0u64..3,
                                     f in prop::sample::select(vec!["0", "5", "25", "75", "125", "0625", "50"])) {
            let (unit, shift) = UNITS[u];
            let w = if edge { (1u64 << (64 - shift)) - 1 + d } else { w_small };
            let s = format!("{w}.{f}{unit}");
            let frac: u128 = f.parse().unwrap();
            let exact = (u128::from(w) << shift) + (frac << shift) / 10u128.pow(f.len() as u32);
            let got = within(&s, || parse_size(&s));
            if exact < 1 << 53 {
                prop_assert_eq!(got, Ok(exact as u64), "{:?}", s);
            } else if exact >= 1 << 64 {
                prop_assert!(got.is_err(), "{:?} gave {:?}", s, got);
            } else if let Ok(v) = got {
                prop_assert!(u128::from(v).abs_diff(exact) <= exact >> 52, "{:?} gave {}", s, v);
            }
        }

        /// `format_size` prints what `parse_size` reads back, in the largest
        /// unit that divides the value.
        #[test]
        fn fuzz_format_size_round_trips(x in any::<u64>(), shift in 0u32..64) {
            for b in [x, x << shift, x >> shift, 1u64 << shift] {
                let s = format_size(b);
                prop_assert_eq!(parse_size(&s), Ok(b), "{:?}", s);
                let unit = s.trim_start_matches(|c: char| c.is_ascii_digit());
                let k = UNITS.iter().find(|(u, _)| *u == unit).map(|&(_, k)| k);
                prop_assert!(k.is_some(), "{:?}", s);
                let k = k.unwrap();
                prop_assert!(b.trailing_zeros() >= k);
                prop_assert!(b == 0 || k == 50 || b.trailing_zeros() < k + 10 || b >> k < 1024, "{} as {:?}", b, s);
            }
        }

        /// `INT[.FRAC][eEXP]` with underscores: the exact whole number, or an
        /// error when it has a fraction or does not fit in a u64.
        #[test]
        fn fuzz_parse_count_decimals(int in prop_oneof![0u64..1_000_000, Just(0u64)], frac in "[0-9]{0,4}",
                                     exp in prop::option::of(0u32..25), big_e: bool, under: bool) {
            let int_s = if under && int >= 1000 { format!("{}_{:03}", int / 1000, int % 1000) } else { int.to_string() };
            let mut s = int_s;
            if !frac.is_empty() {
                s = format!("{s}.{frac}");
            }
            if let Some(e) = exp {
                s = format!("{s}{}{e}", if big_e { 'E' } else { 'e' });
            }
            // value = (int·10^len + frac) · 10^exp / 10^len, if whole and < 2⁶⁴
            let len = frac.len() as u32;
            let num = (u128::from(int) * 10u128.pow(len) + frac.parse::<u128>().unwrap_or(0))
                * 10u128.pow(exp.unwrap_or(0));
            let den = 10u128.pow(len);
            let want = if num.is_multiple_of(den) { u64::try_from(num / den).ok() } else { None };
            prop_assert_eq!(within(&s, || parse_count(&s)).ok(), want, "{:?}", s);
        }
    }

    /// Inputs the fuzz tests found or that sit on an edge, kept as plain
    /// regression tests.
    #[test]
    fn fuzz_regressions() {
        // 16384 P is exactly 2⁶⁴: one past u64::MAX, by the integer and the
        // fractional path alike (the fractional one saturated to u64::MAX).
        assert!(parse_size("16384P").is_err());
        assert!(parse_size("16384.0P").is_err());
        assert_eq!(parse_size("16383.5P"), Ok((16383 << 50) + (1 << 49)));
        // 2⁶⁴ and 2⁶⁴ + 1 overflow a u64 and are read as doubles: 2⁶⁴.
        assert!(parse_size("18446744073709551616").is_err());
        assert!(parse_size("18446744073709551617").is_err());
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        // Zero with an exponent whose power of ten is not a u64.
        assert_eq!(parse_count("0e20"), Ok(0));
        assert_eq!(parse_count("0.000e25"), Ok(0));
        assert!(parse_count("1e20").is_err());
    }
}
