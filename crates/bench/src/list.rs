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

/// Fuzz tests of value lists against a naive set oracle
/// (`PROPTEST_CASES=20000 cargo test -p emsort-bench fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::fuzz::{strictly_sorted, text};
    use emsort_io::test_util::{cases, within};
    use proptest::prelude::*;

    /// An item: a number or a range, numbers small, at the bounds, huge or
    /// not numbers; and its values (`None`: the item is an error).
    fn item(lo: u64, hi: u64) -> impl Strategy<Value = (String, Option<Vec<u64>>)> {
        let num = prop_oneof![
            4 => (lo.saturating_sub(2)..hi + 3).prop_map(|n| n.to_string()),
            1 => any::<u64>().prop_map(|n| n.to_string()),
            1 => prop::sample::select(vec!["", "x", "-1", "+3", "18446744073709551616", " 5", "1e2", "٣"])
                .prop_map(String::from),
        ];
        let one = move |s: &str| s.trim().parse::<u64>().ok().filter(|v| (lo..=hi).contains(v));
        prop_oneof![
            num.clone().prop_map(move |s| {
                let v = one(&s).map(|v| vec![v]);
                (s, v)
            }),
            (num.clone(), num).prop_map(move |(a, b)| {
                let v = match (one(&a), one(&b)) {
                    (Some(a), Some(b)) if a <= b => Some((a..=b).collect()),
                    _ => None,
                };
                (format!("{a}..{b}"), v)
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(512)))]

        /// Items and ranges: their union, sorted; or an error when an item
        /// is empty, not a number, out of range or an empty range.
        #[test]
        fn fuzz_int_list_union(items in prop::collection::vec(item(2, 64), 1..6), spaced: bool) {
            let s = items.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>().join(if spaced { " , " } else { "," });
            let want = items.iter().map(|(_, v)| v.clone()).collect::<Option<Vec<_>>>().map(|vs| {
                let set: std::collections::BTreeSet<u64> = vs.into_iter().flatten().collect();
                set.into_iter().collect::<Vec<_>>()
            });
            prop_assert_eq!(within(&s, || parse_int_list(&s, "d", 2, 64)).ok(), want, "{:?}", s);
        }

        /// Any text: values within the bounds, sorted and distinct, or an error.
        #[test]
        fn fuzz_int_list_any_text(s in prop_oneof![any::<String>(), text(&["1", "64", "500", ",", "..", " "], 10)],
                                  hi in prop::sample::select(vec![1u64, 64, 500, 4096])) {
            if let Ok(v) = within(&s, || parse_int_list(&s, "k", 1, hi)) {
                prop_assert!(!v.is_empty() && strictly_sorted(&v) && v.iter().all(|x| (1..=hi).contains(x)));
            }
        }
    }
}
