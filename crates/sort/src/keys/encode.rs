//! Each key's normalised form: a byte string whose bytewise order is the
//! key's order (see the module docs of [`crate::keys`] for the layouts).

use super::field::is_blank;
use super::locale::NON_CHAR;
use super::{general, Ignore, Key, KeyKind, Locale};

/// How `-n` and `-h` read numbers: GNU's `decimal_point` and
/// `thousands_sep` (as an unsigned byte; [`NON_CHAR`] when none).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Num {
    pub decimal: u8,
    pub thousands: u8,
}

impl Num {
    /// The C locale's: `.`, and no separator (GNU 9.1 then skips byte
    /// 0x80, see [`number_form`]).
    pub const C: Num = Num { decimal: b'.', thousands: NON_CHAR };

    /// The locale's, or C's.
    #[inline]
    pub fn of(loc: Option<&Locale>) -> Num {
        loc.map_or(Num::C, |l| Num { decimal: l.decimal_point(), thousands: l.thousands_sep() })
    }
}

/// GNU's `nonprinting` (not `isprint`) in the C locale.
#[inline]
fn nonprinting(b: u8) -> bool {
    !(0x20..0x7f).contains(&b)
}

/// GNU's `nondictionary`: neither alphanumeric nor blank.
#[inline]
fn nondictionary(b: u8) -> bool {
    !(b.is_ascii_alphanumeric() || is_blank(b))
}

/// The key's bytes after `-d`/`-i` (dropped bytes) and `-f` (folded to
/// upper case) into `out`; `None` when neither applies (use the bytes).
/// In a locale, by its tables (GNU's `inittables`).
pub(crate) fn transform<'a>(
    key: &Key,
    text: &'a [u8],
    out: &'a mut Vec<u8>,
    loc: Option<&Locale>,
) -> &'a [u8] {
    if key.ignore.is_none() && !key.fold {
        return text;
    }
    out.clear();
    if let Some(l) = loc {
        let ignore = match key.ignore {
            Some(Ignore::Nonprinting) => Some(l.nonprinting()),
            Some(Ignore::Nondictionary) => Some(l.nondictionary()),
            None => None,
        };
        let fold = l.fold();
        for &b in text {
            if !ignore.is_some_and(|t| t[b as usize]) {
                out.push(if key.fold { fold[b as usize] } else { b });
            }
        }
        return out;
    }
    for &b in text {
        let drop = match key.ignore {
            Some(Ignore::Nonprinting) => nonprinting(b),
            Some(Ignore::Nondictionary) => nondictionary(b),
            None => false,
        };
        if !drop {
            out.push(if key.fold { b.to_ascii_uppercase() } else { b });
        }
    }
    out
}

/// Appends the normalised form of one key (its bytes `text` after
/// [`transform`]) to `out`, inverted when the key is reversed. Returns
/// false for the kinds that have none (`-V`, `-R`): nothing is appended,
/// and the comparator decides.
#[inline]
pub(crate) fn encode_key(
    kind: KeyKind,
    reverse: bool,
    text: &[u8],
    out: &mut Vec<u8>,
    loc: Option<&Locale>,
) -> bool {
    let start = out.len();
    match kind {
        KeyKind::Text => match loc {
            Some(l) if l.collates() => l.text_form(text, out),
            _ => text_form(text, out),
        },
        // A NUL ends every scanner's number or name as it ends the C
        // strings GNU reads them from (strtold's input is cut there too).
        KeyKind::Numeric => number_form(text, out, Num::of(loc)),
        KeyKind::HumanNumeric => {
            let t = skip_blanks(text);
            let num = Num::of(loc);
            out.push((unit_order(t, num) + 8) as u8);
            number_form(t, out, num);
        }
        KeyKind::Month => out.push(match loc {
            Some(l) => l.month(skip_blanks(text)).0,
            None => month(text),
        }),
        KeyKind::GeneralNumeric => general::form(text, out, loc),
        KeyKind::Version | KeyKind::Random => return false,
    }
    if reverse {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
    true
}

#[inline]
pub(crate) fn skip_blanks(t: &[u8]) -> &[u8] {
    let n = t.iter().take_while(|&&b| is_blank(b)).count();
    &t[n..]
}

/// Text: each byte as itself, NUL as `00 FF`, then the terminator `00 00`,
/// so a proper prefix sorts first and no form is a prefix of another.
fn text_form(t: &[u8], out: &mut Vec<u8>) {
    let mut rest = t;
    while let Some(p) = memchr::memchr(0, rest) {
        out.extend_from_slice(&rest[..p]);
        out.extend_from_slice(&[0, 0xff]);
        rest = &rest[p + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&[0, 0]);
}

/// A number as GNU's `strnumcmp` reads it with `num`'s decimal point and
/// thousands separator (in the C locale `.` and none): blanks, an optional
/// `-`, digits (and separators, skipped), optionally the decimal point and
/// digits; anything else ends it, and no digit at all is zero.
///
/// Form: class `01` negative, `02` zero, `03` positive; for non-zero
/// numbers then the decimal exponent E of 0.d₁d₂…×10^E (d₁ ≠ 0) as one
/// byte `80+E` for |E| < 64, else `00`/`FF` and 4 bytes big-endian, then
/// the significant digits two to a byte as nibbles d+1, ended by a 0
/// nibble (a 00 byte after an even count). Negative numbers invert all
/// but the class byte.
pub(crate) fn number_form(t: &[u8], out: &mut Vec<u8>, num: Num) {
    let t = skip_blanks(t);
    let (neg, t) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        _ => (false, t),
    };
    let int_len = digits(t);
    let sep = num.thousands;
    if t.get(int_len) != Some(&sep) {
        return digits_form(neg, &t[..int_len], &t[int_len..], out, num.decimal);
    }
    // The separator is skipped anywhere in the integer part. GNU 9.1
    // reads byte 0x80 as one in the C locale (its "no separator" value,
    // CHAR_MAX + 1, equals an unsigned 0x80).
    let int_len = t.iter().take_while(|&&b| b.is_ascii_digit() || b == sep).count();
    let int: Vec<u8> = t[..int_len].iter().copied().filter(|&b| b != sep).collect();
    digits_form(neg, &int, &t[int_len..], out, num.decimal)
}

/// How many ASCII digits `t` starts with.
#[inline]
fn digits(t: &[u8]) -> usize {
    t.iter().position(|b| !b.is_ascii_digit()).unwrap_or(t.len())
}

/// [`number_form`] of the integer digits `int` and what follows them.
#[inline]
fn digits_form(neg: bool, int: &[u8], rest: &[u8], out: &mut Vec<u8>, decimal: u8) {
    let frac = match rest.split_first() {
        Some((&d, f)) if d == decimal => &f[..digits(f)],
        _ => &rest[..0],
    };
    let int = &int[int.iter().position(|&b| b != b'0').unwrap_or(int.len())..];
    let frac = &frac[..frac.iter().rposition(|&b| b != b'0').map_or(0, |p| p + 1)];
    let (exp, digits_int, digits_frac): (i64, &[u8], &[u8]) = if !int.is_empty() {
        (int.len() as i64, int, frac)
    } else {
        // Trailing zeros are gone: an all-zero fraction is empty.
        let Some(zeros) = frac.iter().position(|&b| b != b'0') else {
            out.push(2);
            return;
        };
        (-(zeros as i64), &frac[..0], &frac[zeros..])
    };
    out.push(if neg { 1 } else { 3 });
    let from = out.len();
    if (-63..=63).contains(&exp) {
        out.push((0x80 + exp) as u8);
    } else if exp < 0 {
        out.push(0);
        out.extend_from_slice(&((exp as i32 as u32) ^ 0x8000_0000).to_be_bytes());
    } else {
        out.push(0xff);
        out.extend_from_slice(&(exp.min(u32::MAX as i64) as u32).to_be_bytes());
    }
    pack_digits(digits_int, digits_frac, out);
    if neg {
        for b in &mut out[from..] {
            *b = !*b;
        }
    }
}

/// The digits of `a` then `b`, two to a byte as nibbles d+1, then a 0
/// nibble (a `00` byte after an even count).
#[inline]
fn pack_digits(a: &[u8], b: &[u8], out: &mut Vec<u8>) {
    let nib = |d: u8| d - b'0' + 1;
    out.reserve((a.len() + b.len()) / 2 + 1);
    let mut pairs = a.chunks_exact(2);
    for p in &mut pairs {
        out.push(nib(p[0]) << 4 | nib(p[1]));
    }
    let mut b = b;
    if let [last] = pairs.remainder() {
        match b.split_first() {
            Some((&first, rest)) => {
                out.push(nib(*last) << 4 | nib(first));
                b = rest;
            }
            None => return out.push(nib(*last) << 4),
        }
    }
    let mut pairs = b.chunks_exact(2);
    for p in &mut pairs {
        out.push(nib(p[0]) << 4 | nib(p[1]));
    }
    match pairs.remainder() {
        [last] => out.push(nib(*last) << 4),
        _ => out.push(0),
    }
}

/// GNU's `traverse_raw_number`: digits, each perhaps followed by one
/// thousands separator, then the decimal point and digits; returns the
/// highest digit (0 for none) and where the number ends. It reads bytes as
/// signed chars, so a separator of 0x80 or more ([`NON_CHAR`]) never
/// matches here, unlike in [`number_form`]; a separator not followed by a
/// digit ends the number on it.
pub(crate) fn raw_number(t: &[u8], num: Num) -> (u8, usize) {
    let sep = (num.thousands < 0x80).then_some(num.thousands);
    let (mut p, mut max) = (0, 0u8);
    let mut ends_with_sep = false;
    while let Some(&d) = t.get(p).filter(|b| b.is_ascii_digit()) {
        max = max.max(d);
        p += 1;
        ends_with_sep = sep.is_some() && t.get(p).copied() == sep;
        if ends_with_sep {
            p += 1;
        }
    }
    if ends_with_sep {
        return (max, p - 1);
    }
    if t.get(p) == Some(&num.decimal) {
        p += 1;
        while let Some(&d) = t.get(p).filter(|b| b.is_ascii_digit()) {
            max = max.max(d);
            p += 1;
        }
    }
    (max, p)
}

/// GNU's `find_unit_order` after blanks: 0 without a non-zero digit, else
/// the suffix's order (k/K 1, M 2, G 3, T 4, P 5, E 6, Z 7, Y 8, other 0),
/// negative for a negative number.
pub(crate) fn unit_order(t: &[u8], num: Num) -> i32 {
    let (neg, t) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        _ => (false, t),
    };
    let (max, unit_at) = raw_number(t, num);
    if max <= b'0' {
        return 0;
    }
    let order = match t.get(unit_at) {
        Some(b'K' | b'k') => 1,
        Some(b'M') => 2,
        Some(b'G') => 3,
        Some(b'T') => 4,
        Some(b'P') => 5,
        Some(b'E') => 6,
        Some(b'Z') => 7,
        Some(b'Y') => 8,
        _ => 0,
    };
    if neg {
        -order
    } else {
        order
    }
}

/// GNU's `getmonth` in the C locale: after blanks, the first three bytes
/// folded to upper case name a month (1–12), else 0.
fn month(t: &[u8]) -> u8 {
    const NAMES: [&[u8; 3]; 12] =
        [b"JAN", b"FEB", b"MAR", b"APR", b"MAY", b"JUN", b"JUL", b"AUG", b"SEP", b"OCT", b"NOV", b"DEC"];
    let t = skip_blanks(t);
    if t.len() < 3 {
        return 0;
    }
    let m = [t[0].to_ascii_uppercase(), t[1].to_ascii_uppercase(), t[2].to_ascii_uppercase()];
    NAMES.iter().position(|n| **n == m).map_or(0, |i| i as u8 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn num(s: &str) -> Vec<u8> {
        let mut v = Vec::new();
        number_form(s.as_bytes(), &mut v, Num::C);
        v
    }

    #[test]
    fn numbers_order_by_value() {
        let asc = [
            "-1000", "-999.5", "-10", "-9.99", "-1", "-0.5", "-0.05", "0", "0.0001", "0.5", "1", "1.5", "9",
            "10", "10.01", "99", "100",
        ];
        for w in asc.windows(2) {
            assert!(num(w[0]) < num(w[1]), "{} {}", w[0], w[1]);
        }
        for same in [
            ["0", "-0"],
            ["", "abc"],
            ["+5", "0"],
            ["1.50", "1.5"],
            ["007", "7."],
            [" \t-3", "-3x"],
            ["-.5", "-0.50"],
        ] {
            assert_eq!(num(same[0]), num(same[1]), "{same:?}");
        }
        // -1e9 is -1: the exponent is not read.
        assert_eq!(num("-1e9"), num("-1"));
        let long = "1".repeat(5000);
        assert!(num(&long) > num(&"9".repeat(4999)));
        assert!(num(&format!("0.{}1", "0".repeat(100))) < num("0.0001"));
    }

    #[test]
    fn units_and_months() {
        assert_eq!(unit_order(b"1K", Num::C), 1);
        assert_eq!(unit_order(b"-1.5G", Num::C), -3);
        assert_eq!(unit_order(b"0K", Num::C), 0);
        assert_eq!(unit_order(b"1.G", Num::C), 3);
        assert_eq!(unit_order(b"5e", Num::C), 0);
        assert_eq!(unit_order(b"1\x802K", Num::C), 0);
        assert_eq!(unit_order(b"0\x802M", Num::C), 0);
        let numb = |s: &[u8]| {
            let mut v = Vec::new();
            number_form(s, &mut v, Num::C);
            v
        };
        assert_eq!(numb(b"-\x809"), num("-9"));
        assert_eq!(numb(b"1\x80\x8023.5"), num("123.5"));
        assert_eq!(month(b"  jan"), 1);
        assert_eq!(month(b"December"), 12);
        assert_eq!(month(b"ja"), 0);
    }

    proptest! {
        #[test]
        fn text_forms_order_like_the_bytes(a in prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', 0xff]), 0..6),
                                           b in prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', 0xff]), 0..6)) {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            text_form(&a, &mut x);
            text_form(&b, &mut y);
            prop_assert_eq!(x.cmp(&y), a.cmp(&b));
        }

        #[test]
        fn number_forms_order_like_decimals(a in -1_000_000i64..1_000_000, b in -1_000_000i64..1_000_000,
                                            sa in 0u32..4, sb in 0u32..4) {
            let fmt = |v: i64, s: u32| {
                let d = 10i64.pow(s);
                let sign = if v < 0 { "-" } else { "" };
                format!("{sign}{}.{:0w$}", v.abs() / d, v.abs() % d, w = s as usize)
            };
            let (x, y) = (fmt(a, sa), fmt(b, sb));
            let (va, vb) = (a as i128 * 10i128.pow(3 - sa), b as i128 * 10i128.pow(3 - sb));
            prop_assert_eq!(num(&x).cmp(&num(&y)), va.cmp(&vb), "{} {}", x, y);
        }
    }
}
