//! Comma-separated value lists, shared by the campaigns' flags and
//! parameter files: `1,2,4`, `2..8` (every integer in the range), or a mix.

/// Splits `a, b ,c` into trimmed items; an empty item is an error.
pub(crate) fn split_list(s: &str) -> Result<Vec<&str>, String> {
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(format!("empty item in list '{}'", s.trim()));
    }
    Ok(items)
}

/// Parses integers and integer ranges (`1,2,4`, `1..30`), each within
/// `lo..=hi`; `what` names the value in messages (`k`, `fan-in d`). The
/// result is sorted and without duplicates.
pub(crate) fn parse_int_list(s: &str, what: &str, lo: u64, hi: u64) -> Result<Vec<u64>, String> {
    let one = |x: &str| -> Result<u64, String> {
        let v: u64 = x.trim().parse().map_err(|_| format!("invalid {what} '{}'", x.trim()))?;
        if !(lo..=hi).contains(&v) {
            return Err(format!("{what} = {v} out of range ({lo}..={hi})"));
        }
        Ok(v)
    };
    let mut v = Vec::new();
    for item in split_list(s)? {
        match item.split_once("..") {
            Some((a, b)) => {
                let (a, b) = (one(a)?, one(b)?);
                if a > b {
                    return Err(format!("empty {what} range '{item}'"));
                }
                v.extend(a..=b);
            }
            None => v.push(one(item)?),
        }
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_int_list("4, 1..3,2", "k", 1, 30), Ok(vec![1, 2, 3, 4]));
        assert!(parse_int_list("0", "k", 1, 30).unwrap_err().contains("out of range"));
        assert!(parse_int_list("3..2", "k", 1, 30).unwrap_err().contains("empty k range"));
        assert!(parse_int_list("1,,2", "k", 1, 30).unwrap_err().contains("empty item"));
        assert!(parse_int_list("x", "fan-in d", 2, 64).unwrap_err().contains("invalid fan-in d 'x'"));
    }
}
