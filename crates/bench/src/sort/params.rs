//! Parameter files and value lists for sort campaigns.
//!
//! A parameter file describes a whole campaign: a header line, then one row
//! per [`Grid`], seven to nine `;`-separated fields:
//!
//! ```text
//! # comments start with '#', blank lines are skipped
//! format;sizes;M list;d list;policies;io kinds;reps;threads;keys
//! u32;64M,256M;16M,64M;2,8,32;optimal;buffered,direct;3;2
//! lines;64M;16M,64M;8;fifo,optimal;buffered;3;1,2
//! csv;1G;256M;8;optimal;direct;5;2;k3n,k2-k3nr,u,k1n-u
//! csv-export;1G;256M,64M;default;default;default;3;2;amount:n,name
//! words;1G;256M;default;default;default;3;2;plain,LC_ALL=en_US.UTF-8
//! ```
//!
//! | field    | syntax |
//! |----------|--------|
//! | format   | formats emsort sorts: `u32`, `i32`, `u64`, `i64`, `f32`, `f64`, `rec:SIZE:OFF:LEN`, `lines`; and the keys experiment's data sets ([`super::keys`], [`DataSet`]): `csv`, `csv-export`, `jsonl`, `words` |
//! | sizes    | input sizes N in bytes with K/M/G suffixes (`64M,1G`); fixed-size formats round down to whole items |
//! | M list   | memory budgets with K/M/G suffixes |
//! | d list   | fan-ins (≥ 2), `a..b` for every integer from a to b; `default`: no `--fan-in` (nor `--block-size`), emsort's own d and B |
//! | policies | `fifo`, `optimal`; `default`: no `--policy` |
//! | io kinds | stream kinds: `buffered`, `direct`, `uring`, `uring-direct`, `mmap`, `syscall`, `stdio`, `all`; `default`: no `--io`, the sort's own choice (`--io auto`) |
//! | reps     | repetitions of each point |
//! | threads  | optional: `--parallel` values (`1,2`); empty or absent = all cores |
//! | keys     | optional, with a data set only: key sorts ([`parse_keys`]: on `csv` `k3n`, `k2-k3nr`, `u`, `k1n-u`, `plain`, `all`; on `csv-export` `amount:n`, `name`; on `jsonl` `.ts:n`, `.amount:n`; on `words` `plain`), and `LC_ALL=LOCALE`, the locale every tool of the row sorts in (default `C`); no sort = each data set's defaults ([`KeySort::defaults`]: `all` on `csv`) |
//!
//! A data set runs the keys experiment at each size, M and threads of
//! its row, each of the row's key sorts that applies to it
//! ([`KeySort::data_sets`]); emsort runs there with its own default
//! fan-in, policy and streams (as a user runs it), so the d, policies and
//! io fields, which must still parse, apply to the other formats of the
//! row only.
//!
//! `default` in the d, policies or io field runs emsort as a user runs it,
//! without that flag (`None` in the [`Grid`]): the row then records what
//! emsort chose (from its statistics), and its `io` column says `default`.
//! A row `u32;1G;256M;default;default;default,direct;3;2` sets emsort with
//! no tuning flag beside `emsort --io direct`, the two differing in `--io`
//! alone.
//!
//! Points that appear in two rows run once, with the larger reps. Errors
//! name the file, the line and the field. The same list syntaxes serve the
//! command line ([`parse_formats`], [`parse_sizes`], [`parse_fan_ins`],
//! [`parse_policies`], [`parse_threads`]).

use std::path::Path;

use emsort_io::{parse_size, StreamKind};
use emsort_sort::merge_policy::MergePolicy;
use emsort_sort::Format;

use super::data_set::DataSet;
use super::keys::{parse_keys, KeySort};
use crate::list::{parse_int_list, split_list};
use crate::{Error, Result};

/// Largest fan-in accepted (each run open in a merge holds a descriptor).
pub const MAX_FAN_IN: usize = 500;

/// One row of a parameter file: every combination of its lists is a point.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Data formats (emsort's sort experiment; may be empty when `keys`
    /// is not).
    pub formats: Vec<Format>,
    /// Input sizes N in bytes.
    pub sizes: Vec<u64>,
    /// Memory budgets M in bytes.
    pub memories: Vec<u64>,
    /// Fan-ins d (`None`: emsort's default, no `--fan-in`).
    pub fan_ins: Vec<Option<usize>>,
    /// Merge policies (`None`: emsort's default, no `--policy`).
    pub policies: Vec<Option<MergePolicy>>,
    /// Stream kinds, reading and writing (`None`: the sort's own choice,
    /// no `--io`).
    pub io: Vec<Option<StreamKind>>,
    /// Threads (`--parallel`); 0 means all cores.
    pub threads: Vec<usize>,
    /// Repetitions of each point.
    pub reps: u32,
    /// The keys experiment's data sets (empty: no keys experiment).
    pub data_sets: Vec<DataSet>,
    /// The keys experiment's sorts, each run on the data sets it applies
    /// to.
    pub keys: Vec<KeySort>,
    /// The locale of the keys experiment's sorts (`LC_ALL`; `None`: `C`).
    pub locale: Option<String>,
}

/// Parses formats: `u32,lines,rec:100:0:10`.
pub fn parse_formats(s: &str) -> std::result::Result<Vec<Format>, String> {
    let mut v: Vec<Format> = Vec::new();
    for f in split_list(s)? {
        let f: Format = f.parse()?;
        if !v.contains(&f) {
            v.push(f);
        }
    }
    Ok(v)
}

/// Parses a format list that may hold the keys experiment's data sets
/// (`csv`, `csv-export`, `jsonl`, `words`): the formats and the data sets.
///
/// ```
/// use emsort_bench::sort::{parse_inputs, DataSet};
/// use emsort_sort::Format;
/// assert_eq!(parse_inputs("lines,csv"), Ok((vec![Format::Lines], vec![DataSet::Csv])));
/// assert_eq!(parse_inputs("u32"), Ok((vec![Format::U32], vec![])));
/// ```
pub fn parse_inputs(s: &str) -> std::result::Result<(Vec<Format>, Vec<DataSet>), String> {
    let (mut formats, mut data_sets) = (Vec::new(), Vec::new());
    for item in split_list(s)? {
        match item.parse::<DataSet>() {
            Ok(d) if !data_sets.contains(&d) => data_sets.push(d),
            Ok(_) => {}
            Err(_) => {
                for f in parse_formats(item)? {
                    if !formats.contains(&f) {
                        formats.push(f);
                    }
                }
            }
        }
    }
    Ok((formats, data_sets))
}

/// The key sorts and locale of a grid: `keys` parsed when the inputs
/// hold a data set (no sort: each data set's defaults), an error when
/// they do not or when a sort applies to none of them. An item
/// `LC_ALL=LOCALE` is the locale.
///
/// ```
/// use emsort_bench::sort::{grid_keys, DataSet, KeySort};
/// let (keys, locale) = grid_keys(&[DataSet::Words], "LC_ALL=en_US.UTF-8").unwrap();
/// assert_eq!((keys, locale.as_deref()), (vec![KeySort::Plain], Some("en_US.UTF-8")));
/// assert!(grid_keys(&[DataSet::Jsonl], "name").is_err());
/// ```
pub fn grid_keys(
    data_sets: &[DataSet],
    keys: &str,
) -> std::result::Result<(Vec<KeySort>, Option<String>), String> {
    let t = keys.trim();
    if t.is_empty() || t == "-" {
        let mut v: Vec<KeySort> =
            data_sets.iter().flat_map(|&d| KeySort::defaults(d).iter().copied()).collect();
        v.sort_unstable();
        v.dedup();
        return Ok((v, None));
    }
    if data_sets.is_empty() {
        return Err(
            "key sorts need a data set (csv, csv-export, jsonl or words: the keys experiment's input)".into(),
        );
    }
    let mut locale = None;
    let mut sorts = Vec::new();
    for item in split_list(t)? {
        match item.strip_prefix("LC_ALL=") {
            Some(l) if l.is_empty() || l.contains(char::is_whitespace) => {
                return Err(format!("invalid locale '{item}' (LC_ALL=NAME, e.g. LC_ALL=en_US.UTF-8)"))
            }
            Some(l) => locale = Some(l.to_string()),
            None => sorts.push(item),
        }
    }
    let mut v = if sorts.is_empty() { grid_keys(data_sets, "")?.0 } else { parse_keys(&sorts.join(","))? };
    for k in &v {
        if !k.data_sets().iter().any(|d| data_sets.contains(d)) {
            let on: Vec<&str> = k.data_sets().iter().map(|d| d.name()).collect();
            return Err(format!("key sort '{}' applies to {} only", k.name(), on.join(", ")));
        }
    }
    v.dedup();
    Ok((v, locale))
}

/// Parses byte sizes with K/M/G suffixes (`64M,1G`), each ≥ 1 byte; sorted.
///
/// ```
/// use emsort_bench::sort::parse_sizes;
/// assert_eq!(parse_sizes("1M,4K"), Ok(vec![4096, 1 << 20]));
/// assert!(parse_sizes("0").is_err());
/// ```
pub fn parse_sizes(s: &str) -> std::result::Result<Vec<u64>, String> {
    let mut v = Vec::new();
    for item in split_list(s)? {
        let b = parse_size(item)?;
        if b == 0 {
            return Err(format!("size '{item}' must be at least 1 byte"));
        }
        v.push(b);
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// The word for "no flag: emsort's own choice" in the d, policies and io
/// lists.
pub const DEFAULT: &str = "default";

/// Splits off the word [`DEFAULT`] from a list: whether it was there, and
/// the rest joined again (empty when nothing else was listed).
fn split_default(s: &str) -> std::result::Result<(bool, String), String> {
    let items = split_list(s)?;
    let default = items.iter().any(|i| i.eq_ignore_ascii_case(DEFAULT));
    let rest: Vec<&str> = items.into_iter().filter(|i| !i.eq_ignore_ascii_case(DEFAULT)).collect();
    Ok((default, rest.join(",")))
}

/// `None` first when `default` was listed, then the values parsed from the rest.
fn with_default<T>(
    s: &str,
    parse: impl Fn(&str) -> std::result::Result<Vec<T>, String>,
) -> std::result::Result<Vec<Option<T>>, String> {
    let (default, rest) = split_default(s)?;
    let mut v: Vec<Option<T>> = if default { vec![None] } else { Vec::new() };
    if !rest.is_empty() {
        v.extend(parse(&rest)?.into_iter().map(Some));
    }
    Ok(v)
}

/// Parses fan-ins: `2,8,32` or `2..8`, each in 2..=[`MAX_FAN_IN`];
/// `default` (`None`, first) for emsort's own.
///
/// ```
/// use emsort_bench::sort::parse_fan_ins;
/// assert_eq!(parse_fan_ins("8,default"), Ok(vec![None, Some(8)]));
/// ```
pub fn parse_fan_ins(s: &str) -> std::result::Result<Vec<Option<usize>>, String> {
    with_default(s, |s| {
        Ok(parse_int_list(s, "fan-in d", 2, MAX_FAN_IN as u64)?.into_iter().map(|d| d as usize).collect())
    })
}

/// Parses merge policies: `fifo,optimal`; `default` (`None`, first) for
/// emsort's own.
pub fn parse_policies(s: &str) -> std::result::Result<Vec<Option<MergePolicy>>, String> {
    with_default(s, |s| {
        let mut v: Vec<MergePolicy> = Vec::new();
        for p in split_list(s)? {
            let p: MergePolicy = p.to_ascii_lowercase().parse()?;
            if !v.contains(&p) {
                v.push(p);
            }
        }
        Ok(v)
    })
}

/// Parses stream kinds: `buffered,direct` or `all`; `default` (`None`,
/// first) for no `--io` flag, the sort's own choice.
///
/// ```
/// use emsort_bench::sort::parse_io;
/// use emsort_io::StreamKind;
/// assert_eq!(parse_io("direct,default"), Ok(vec![None, Some(StreamKind::Direct)]));
/// ```
pub fn parse_io(s: &str) -> std::result::Result<Vec<Option<StreamKind>>, String> {
    with_default(s, crate::streams::parse_kinds)
}

/// `default` for `None`, else the value's name: how a [`Grid`]'s optional
/// settings read in labels and CSV files.
pub fn or_default<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| DEFAULT.to_string())
}

/// Parses thread counts: `1,2`; empty, `-` or `all` mean all cores (0).
pub fn parse_threads(s: &str) -> std::result::Result<Vec<usize>, String> {
    let t = s.trim();
    if t.is_empty() || t == "-" || t.eq_ignore_ascii_case("all") {
        return Ok(vec![0]);
    }
    let mut v = Vec::new();
    for item in split_list(t)? {
        if item.eq_ignore_ascii_case("all") {
            v.push(0);
            continue;
        }
        let n: usize = item.parse().map_err(|_| format!("invalid thread count '{item}'"))?;
        if n == 0 || n > 1024 {
            return Err(format!("thread count {n} out of range (1..=1024, or 'all')"));
        }
        v.push(n);
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Parses the text of a parameter file; `path` names it in errors.
pub fn parse_params(text: &str, path: &Path) -> Result<Vec<Grid>> {
    const HEADER: &str = "format;sizes;M list;d list;policies;io kinds;reps[;threads[;keys]]";
    let bad = |line: usize, msg: String| Error::Params { path: path.to_path_buf(), line, msg };
    let mut grids = Vec::new();
    let mut seen_header = false;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut fields: Vec<&str> = line.split(';').map(str::trim).collect();
        if fields.len() > 7 && fields.last() == Some(&"") {
            fields.pop(); // a trailing ';'
        }
        if !seen_header {
            seen_header = true;
            if parse_inputs(fields[0]).is_ok_and(|(f, d)| !d.is_empty() || !f.is_empty()) {
                return Err(bad(line_no, format!("expected a header line ({HEADER}) before the rows")));
            }
            continue;
        }
        if !(7..=9).contains(&fields.len()) {
            return Err(bad(
                line_no,
                format!("expected 7 to 9 ';'-separated fields ({HEADER}), found {}", fields.len()),
            ));
        }
        let field =
            |idx: usize, name: &str, e: String| bad(line_no, format!("field {} ({name}): {e}", idx + 1));
        let (formats, data_sets) = parse_inputs(fields[0]).map_err(|e| field(0, "format", e))?;
        let sizes = parse_sizes(fields[1]).map_err(|e| field(1, "sizes", e))?;
        let memories = parse_sizes(fields[2]).map_err(|e| field(2, "M list", e))?;
        let fan_ins = parse_fan_ins(fields[3]).map_err(|e| field(3, "d list", e))?;
        let policies = parse_policies(fields[4]).map_err(|e| field(4, "policies", e))?;
        let io = parse_io(fields[5]).map_err(|e| field(5, "io kinds", e))?;
        let reps: u32 = fields[6].parse().ok().filter(|&r: &u32| r >= 1).ok_or_else(|| {
            field(6, "reps", format!("invalid repetitions '{}' (a whole number ≥ 1)", fields[6]))
        })?;
        let threads =
            parse_threads(fields.get(7).copied().unwrap_or("")).map_err(|e| field(7, "threads", e))?;
        let (keys, locale) =
            grid_keys(&data_sets, fields.get(8).copied().unwrap_or("")).map_err(|e| field(8, "keys", e))?;
        grids.push(Grid {
            formats,
            sizes,
            memories,
            fan_ins,
            policies,
            io,
            threads,
            reps,
            data_sets,
            keys,
            locale,
        });
    }
    if grids.is_empty() {
        return Err(bad(text.lines().count().max(1), "no rows after the header line".into()));
    }
    Ok(grids)
}

/// Reads and parses a parameter file.
pub fn read_params(path: &Path) -> Result<Vec<Grid>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
    parse_params(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Grid>> {
        parse_params(text, Path::new("s.csv"))
    }

    #[test]
    fn lists() {
        assert_eq!(parse_formats("u32,lines,u32"), Ok(vec![Format::U32, Format::Lines]));
        assert!(parse_formats("u33").is_err());
        assert_eq!(parse_sizes("64M, 1G,64M"), Ok(vec![64 << 20, 1 << 30]));
        assert!(parse_sizes("1X").is_err());
        assert!(parse_sizes("1M,,2M").is_err());
        assert_eq!(parse_fan_ins("8,2..4"), Ok(vec![Some(2), Some(3), Some(4), Some(8)]));
        assert_eq!(parse_fan_ins("Default"), Ok(vec![None]));
        assert!(parse_fan_ins("1").is_err());
        assert!(parse_fan_ins("9..3").is_err());
        assert!(parse_fan_ins("default,,8").is_err());
        assert_eq!(
            parse_policies("optimal,FIFO,default"),
            Ok(vec![None, Some(MergePolicy::Optimal), Some(MergePolicy::Fifo)])
        );
        assert!(parse_policies("lifo").is_err());
        assert_eq!(
            parse_io("direct,buffered"),
            Ok(vec![Some(StreamKind::Buffered), Some(StreamKind::Direct)])
        );
        assert_eq!(parse_io("default,uring-direct"), Ok(vec![None, Some(StreamKind::UringDirect)]));
        assert!(parse_io("default,fast").is_err());
        assert_eq!(parse_threads(""), Ok(vec![0]));
        assert_eq!(parse_threads("2,1,all"), Ok(vec![0, 1, 2]));
        assert!(parse_threads("0").is_err());
    }

    #[test]
    fn good_file() {
        let g = parse(
            "# c\nformat;sizes;M;d;policies;io;reps;threads\n\
             u32,lines;64M;16M,32M;2,8;fifo,optimal;buffered;3;1,2\n\
             rec:100:0:10;1M;1M;2..4;optimal;direct;1\n\
             u64;1M;1M;8;optimal;buffered;2;;\n",
        )
        .unwrap();
        assert_eq!(g.len(), 3);
        assert_eq!(g[0].formats, vec![Format::U32, Format::Lines]);
        assert!(g[0].keys.is_empty());
        assert_eq!(g[0].memories, vec![16 << 20, 32 << 20]);
        assert_eq!(g[0].threads, vec![1, 2]);
        assert_eq!(g[0].reps, 3);
        assert_eq!(g[1].fan_ins, vec![Some(2), Some(3), Some(4)]);
        assert_eq!(g[1].threads, vec![0]);
        assert_eq!(g[2].threads, vec![0]);
    }

    /// The data sets of issue 41: each row's sorts run where they apply,
    /// defaults per data set, a locale by `LC_ALL=`.
    #[test]
    fn data_set_rows_carry_sorts_and_a_locale() {
        let g = parse(
            "format;sizes;M;d;policies;io;reps;threads;keys\n\
             csv-export;64M;64M,256M;default;default;default;1;2;amount:n,name\n\
             jsonl,csv-export;1M;1M;8;optimal;direct;1\n\
             words;1M;1M;8;optimal;direct;1;2;LC_ALL=en_US.UTF-8\n\
             jsonl;1M;1M;8;optimal;direct;1;2;.amount:n,.ts:n,LC_ALL=C\n",
        )
        .unwrap();
        assert_eq!(g[0].data_sets, vec![DataSet::CsvExport]);
        assert_eq!((g[0].keys.clone(), g[0].locale.clone()), (vec![KeySort::AmountN, KeySort::Name], None));
        assert_eq!(g[1].data_sets, vec![DataSet::Jsonl, DataSet::CsvExport]);
        assert_eq!(g[1].keys, vec![KeySort::AmountN, KeySort::Name, KeySort::TsN]);
        assert_eq!((g[2].keys.clone(), g[2].locale.as_deref()), (vec![KeySort::Plain], Some("en_US.UTF-8")));
        assert_eq!(
            (g[3].keys.clone(), g[3].locale.as_deref()),
            (vec![KeySort::TsN, KeySort::JsonAmountN], Some("C"))
        );
        let h = "format;sizes;M;d;policies;io;reps;threads;keys\n";
        let e = parse(&format!("{h}jsonl;1M;1M;8;optimal;direct;1;1;name")).unwrap_err().to_string();
        assert!(e.contains("field 9 (keys): key sort 'name' applies to csv-export only"), "{e}");
        let e = parse(&format!("{h}words;1M;1M;8;optimal;direct;1;1;LC_ALL=")).unwrap_err().to_string();
        assert!(e.contains("invalid locale 'LC_ALL='"), "{e}");
        let e = parse(&format!("{h}xml;1M;1M;8;optimal;direct;1;1")).unwrap_err().to_string();
        assert!(e.starts_with("s.csv:2: field 1 (format)"), "{e}");
    }

    #[test]
    fn csv_rows_carry_key_sorts() {
        let g = parse(
            "format;sizes;M;d;policies;io;reps;threads;keys\n\
             csv;1M;1M;8;optimal;direct;2;2;u,k3n\n\
             lines,csv;1M;1M;8;optimal;direct;1\n",
        )
        .unwrap();
        assert_eq!((g[0].formats.len(), g[0].keys.clone()), (0, vec![KeySort::K3n, KeySort::U]));
        assert_eq!((g[1].formats.clone(), g[1].keys.len()), (vec![Format::Lines], 4));
        let h = "format;sizes;M;d;policies;io;reps;threads;keys\n";
        let e = parse(&format!("{h}u32;1M;1M;8;optimal;direct;1;1;u")).unwrap_err().to_string();
        assert!(e.starts_with("s.csv:2: field 9 (keys): key sorts need a data set"), "{e}");
        let e = parse(&format!("{h}csv;1M;1M;8;optimal;direct;1;1;k7")).unwrap_err().to_string();
        assert!(e.starts_with("s.csv:2: field 9 (keys): unknown key sort"), "{e}");
        assert!(parse("csv;1M;1M;8;optimal;direct;1").unwrap_err().to_string().contains("header line"));
    }

    #[test]
    fn bad_lines_name_file_line_and_field() {
        let msg = |t: &str| parse(t).unwrap_err().to_string();
        let h = "format;sizes;M;d;policies;io;reps\n";
        assert!(msg(&format!("{h}u32;1M;1M;8;optimal;buffered\n")).starts_with("s.csv:2: expected 7 to 9"));
        assert!(msg(&format!("{h}u33;1M;1M;8;optimal;buffered;1")).starts_with("s.csv:2: field 1 (format)"));
        assert!(msg(&format!("{h}u32;1Q;1M;8;optimal;buffered;1")).starts_with("s.csv:2: field 2 (sizes)"));
        assert!(msg(&format!("{h}u32;1M;0;8;optimal;buffered;1")).starts_with("s.csv:2: field 3 (M list)"));
        assert!(msg(&format!("{h}u32;1M;1M;1;optimal;buffered;1")).starts_with("s.csv:2: field 4 (d list)"));
        assert!(msg(&format!("{h}u32;1M;1M;8;best;buffered;1")).starts_with("s.csv:2: field 5 (policies)"));
        assert!(msg(&format!("{h}u32;1M;1M;8;optimal;fast;1")).starts_with("s.csv:2: field 6 (io kinds)"));
        assert!(msg(&format!("{h}u32;1M;1M;8;optimal;buffered;0")).starts_with("s.csv:2: field 7 (reps)"));
        assert!(
            msg(&format!("{h}u32;1M;1M;8;optimal;buffered;1;x")).starts_with("s.csv:2: field 8 (threads)")
        );
        assert!(msg("u32;1M;1M;8;optimal;buffered;1").contains("expected a header line"));
        assert!(msg(h).contains("no rows"));
    }
}

/// Fuzz tests of sort campaign parameters (`PROPTEST_CASES=20000 cargo test
/// -p emsort-bench fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::fuzz::{check_error, rows, strictly_sorted, text};
    use emsort_io::test_util::{cases, within};
    use proptest::prelude::*;

    const HEADER: &str = "format;sizes;M list;d list;policies;io kinds;reps;threads";

    fn params() -> BoxedStrategy<String> {
        rows(
            HEADER,
            ";",
            vec![
                vec![
                    "u32",
                    "u32,lines",
                    "rec:100:0:10",
                    "rec:10:18446744073709551615:1",
                    "rec:0:0:0",
                    "u33",
                    "",
                ],
                vec!["64M", "64M,1G", "0", "1X", "1M,,2M", "16384P", "1.5K", "18446744073709551615"],
                vec!["16M", "16M,64M", "0", "4K"],
                vec!["2", "2,8,32", "2..8", "1", "501", "9..3", "2..500", "default", "8,default"],
                vec!["fifo", "optimal", "FIFO,optimal", "lifo", "default"],
                vec!["buffered", "direct,buffered", "all", "fast", "default,uring-direct"],
                vec!["1", "3", "0", "x"],
                vec!["", "1,2", "all", "-", "0", "1025", "2,1,all", "x"],
            ],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(512)))]

        /// Any text, or rows of good and bad fields: grids of valid values
        /// only, or an error naming a line.
        #[test]
        fn fuzz_sort_params(s in prop_oneof![any::<String>(), params(),
                                             text(&[HEADER, "u32", ";", "\n", "64M", "2..8"], 24)]) {
            match within(&s, || parse_params(&s, Path::new("s.csv"))) {
                Ok(grids) => {
                    prop_assert!(!grids.is_empty());
                    for g in grids {
                        prop_assert!(!g.formats.is_empty() || !g.keys.is_empty());
                        prop_assert!(!g.policies.is_empty() && !g.io.is_empty());
                        prop_assert!(!g.sizes.is_empty() && strictly_sorted(&g.sizes) && g.sizes[0] >= 1);
                        prop_assert!(!g.memories.is_empty() && strictly_sorted(&g.memories) && g.memories[0] >= 1);
                        let d: Vec<usize> = g.fan_ins.iter().flatten().copied().collect();
                        prop_assert!(strictly_sorted(&d) && d.iter().all(|d| (2..=MAX_FAN_IN).contains(d)));
                        prop_assert!(!g.fan_ins.is_empty() && g.fan_ins[1..].iter().all(Option::is_some));
                        prop_assert!(strictly_sorted(&g.threads) && g.threads.iter().all(|&t| t <= 1024));
                        prop_assert!(g.reps >= 1);
                    }
                }
                Err(e) => check_error(&e, &s)?,
            }
        }

        /// The list parsers alone, on any text.
        #[test]
        fn fuzz_sort_lists(s in prop_oneof![any::<String>(), text(&["u32", "rec:4:0:1", "64M", "all", "2..9", "fifo", ","], 8)]) {
            within(&s, || {
                let _ = parse_formats(&s);
                if let Ok(v) = parse_sizes(&s) {
                    assert!(strictly_sorted(&v) && v.first().is_some_and(|&b| b >= 1), "{s:?}");
                }
                let _ = parse_fan_ins(&s);
                let _ = parse_policies(&s);
                let _ = parse_io(&s);
                if let Ok(v) = parse_threads(&s) {
                    assert!(!v.is_empty() && strictly_sorted(&v), "{s:?}");
                }
            });
        }
    }
}
