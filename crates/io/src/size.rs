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
    if v > u64::MAX as f64 {
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
    let n = 10u64.checked_pow(shift).and_then(|p| digits.checked_mul(p)).ok_or_else(|| err("too large"))?;
    Ok(n)
}

/// Formats `bytes` with the largest binary unit that divides it evenly
/// (`65536` → `64K`, `1000` → `1000`).
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(50, "P"), (40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
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
