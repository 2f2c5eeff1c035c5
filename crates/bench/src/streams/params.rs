//! Parameter files and value lists for stream campaigns.
//!
//! A parameter file describes a whole campaign, as the INFO-H-417 reports' tool did: a
//! header line, then one row per sweep, six `;`-separated fields:
//!
//! ```text
//! # comments start with '#', blank lines are skipped
//! kind;ops;N list;k list;B range;reps
//! syscall;read,write;1e3,1e4,1e5;1,2,4;-;3
//! buffered;read,write;1e3,1e6,1e8;1,2,4;4..64M;3
//! mmap;read;1e6;1;64K,1M,file;3
//! ```
//!
//! | field  | syntax |
//! |--------|--------|
//! | kind   | `syscall`, `stdio`, `buffered`, `mmap`, `direct`, `uring` |
//! | ops    | `read`, `write` or `read,write` |
//! | N list | element counts per stream, `1e6` or `1000000`, comma-separated |
//! | k list | stream counts, comma-separated, `a..b` for every integer from a to b |
//! | B      | sizes with K/M/G suffixes, `a..b` for every power of two from a to b, `file` for the whole file (N·4 bytes); empty or `-` for kinds that ignore B (`syscall`, `stdio`) |
//! | reps   | repetitions of each point |
//!
//! A kind may have several rows (e.g. an N sweep at one B and a B sweep at
//! one k); points that appear twice run once, with the larger reps. Errors
//! name the file, the line and the field.
//!
//! The same list syntaxes serve the command line ([`parse_counts`],
//! [`parse_ks`], [`parse_blocks`], [`parse_ops`], [`parse_kinds`]).

use std::path::Path;

use emsort_io::{parse_size, StreamKind};

use super::point::{BlockSize, Op, Sweep};
use crate::list::{parse_int_list, split_list};
use crate::{Error, Result};

/// Largest k accepted: each stream holds a file descriptor (and `uring` a
/// ring), and the default limit on open files is 1024.
pub const MAX_K: u32 = 500;

/// Parses an element count: `1000000`, `1e6`, `2.5e6` or `1_000_000`.
///
/// ```
/// use emsort_bench::streams::parse_count;
/// assert_eq!(parse_count("1e6"), Ok(1_000_000));
/// assert_eq!(parse_count("2.5e3"), Ok(2500));
/// assert!(parse_count("1.5").is_err());
/// ```
pub fn parse_count(s: &str) -> std::result::Result<u64, String> {
    match emsort_io::parse_count(s)? {
        0 => Err(format!("invalid count '{}': must be at least 1", s.trim())),
        n => Ok(n),
    }
}

/// Parses a comma-separated list of element counts (`1e3,1e6`).
pub fn parse_counts(s: &str) -> std::result::Result<Vec<u64>, String> {
    let mut v = split_list(s)?.into_iter().map(parse_count).collect::<std::result::Result<Vec<_>, _>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Parses a list of stream counts: `1,2,4`, `1..4` (every integer), or a mix.
pub fn parse_ks(s: &str) -> std::result::Result<Vec<u32>, String> {
    Ok(parse_int_list(s, "k", 1, u64::from(MAX_K))?.into_iter().map(|k| k as u32).collect())
}

/// Parses block sizes: `64K,1M`, `4..64M` (every power of two from 4 bytes
/// to 64 MiB), `file` (the whole file), or a mix; empty or `-` gives an
/// empty list.
///
/// ```
/// use emsort_bench::streams::{parse_blocks, BlockSize};
/// let b = parse_blocks("4..32,file").unwrap();
/// assert_eq!(b, [4, 8, 16, 32].map(BlockSize::Bytes).into_iter()
///     .chain([BlockSize::WholeFile]).collect::<Vec<_>>());
/// ```
pub fn parse_blocks(s: &str) -> std::result::Result<Vec<BlockSize>, String> {
    let t = s.trim();
    if t.is_empty() || t == "-" {
        return Ok(Vec::new());
    }
    let size = |x: &str| -> std::result::Result<u64, String> {
        let b = parse_size(x)?;
        if b == 0 {
            return Err(format!("block size '{}' must be at least 1 byte", x.trim()));
        }
        Ok(b)
    };
    let mut v = Vec::new();
    for item in split_list(t)? {
        if item.eq_ignore_ascii_case("file") {
            v.push(BlockSize::WholeFile);
        } else if let Some((a, b)) = item.split_once("..") {
            let (lo, hi) = (size(a)?, size(b)?);
            if !lo.is_power_of_two() || !hi.is_power_of_two() {
                return Err(format!("B range '{item}': both ends must be powers of two (e.g. 4..64M)"));
            }
            if lo > hi {
                return Err(format!("empty B range '{item}'"));
            }
            // Doubling stops at `hi`, and before it would pass 2⁶³ (a range
            // up to 8192P = 2⁶³ overflowed).
            let mut b = lo;
            loop {
                v.push(BlockSize::Bytes(b));
                match b.checked_mul(2) {
                    Some(next) if next <= hi => b = next,
                    _ => break,
                }
            }
        } else {
            v.push(BlockSize::Bytes(size(item)?));
        }
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Parses operations: `read`, `write`, `read,write` (writes run first).
pub fn parse_ops(s: &str) -> std::result::Result<Vec<Op>, String> {
    let mut v = split_list(s)?.into_iter().map(str::parse).collect::<std::result::Result<Vec<Op>, _>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Parses stream kinds: `syscall,buffered` or `all`.
pub fn parse_kinds(s: &str) -> std::result::Result<Vec<StreamKind>, String> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(StreamKind::ALL.to_vec());
    }
    let mut v = split_list(s)?
        .into_iter()
        .map(|k| k.to_ascii_lowercase().parse())
        .collect::<std::result::Result<Vec<StreamKind>, _>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Checks that a sweep gives B where its kind needs one.
pub(crate) fn check_blocks(kind: StreamKind, blocks: &[BlockSize]) -> std::result::Result<(), String> {
    if kind.uses_block_size() && blocks.is_empty() {
        return Err(format!("{kind} uses a block size B: give sizes (e.g. 64K,1M or 4..64M or file)"));
    }
    Ok(())
}

/// Parses the text of a parameter file; `path` names it in errors.
pub fn parse_params(text: &str, path: &Path) -> Result<Vec<Sweep>> {
    let bad = |line: usize, msg: String| Error::Params { path: path.to_path_buf(), line, msg };
    let mut sweeps = Vec::new();
    let mut seen_header = false;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut fields: Vec<&str> = line.split(';').map(str::trim).collect();
        if fields.len() == 7 && fields[6].is_empty() {
            fields.pop(); // a trailing ';'
        }
        if !seen_header {
            seen_header = true;
            if fields[0].to_ascii_lowercase().parse::<StreamKind>().is_ok() {
                return Err(bad(
                    line_no,
                    "expected a header line (kind;ops;N list;k list;B range;reps) before the rows".into(),
                ));
            }
            continue;
        }
        if fields.len() != 6 {
            return Err(bad(
                line_no,
                format!(
                    "expected 6 ';'-separated fields (kind;ops;N list;k list;B range;reps), found {}",
                    fields.len()
                ),
            ));
        }
        let field =
            |idx: usize, name: &str, e: String| bad(line_no, format!("field {} ({name}): {e}", idx + 1));
        let kind: StreamKind = fields[0].to_ascii_lowercase().parse().map_err(|e| field(0, "kind", e))?;
        let ops = parse_ops(fields[1]).map_err(|e| field(1, "ops", e))?;
        let n = parse_counts(fields[2]).map_err(|e| field(2, "N list", e))?;
        let k = parse_ks(fields[3]).map_err(|e| field(3, "k list", e))?;
        let blocks = parse_blocks(fields[4]).map_err(|e| field(4, "B range", e))?;
        check_blocks(kind, &blocks).map_err(|e| field(4, "B range", e))?;
        let reps: u32 = fields[5].parse().ok().filter(|&r: &u32| r >= 1).ok_or_else(|| {
            field(5, "reps", format!("invalid repetitions '{}' (a whole number ≥ 1)", fields[5]))
        })?;
        sweeps.push(Sweep { kind, ops, n, k, blocks, reps });
    }
    if sweeps.is_empty() {
        return Err(bad(text.lines().count().max(1), "no rows after the header line".into()));
    }
    Ok(sweeps)
}

/// Reads and parses a parameter file.
pub fn read_params(path: &Path) -> Result<Vec<Sweep>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
    parse_params(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Sweep>> {
        parse_params(text, Path::new("p.csv"))
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("1000000"), Ok(1_000_000));
        assert_eq!(parse_count("1e6"), Ok(1_000_000));
        assert_eq!(parse_count("1E3"), Ok(1000));
        assert_eq!(parse_count("2.50e2"), Ok(250));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert!(parse_count("0").is_err());
        assert!(parse_count("1.25e1").is_err());
        assert!(parse_count("-3").is_err());
        assert!(parse_count("1e30").is_err());
        assert!(parse_count("e6").is_err());
        assert!(parse_count("abc").is_err());
        assert_eq!(parse_counts("1e6, 1e3,1e3"), Ok(vec![1000, 1_000_000]));
        assert!(parse_counts("1e3,,1e4").is_err());
    }

    #[test]
    fn ks_blocks_ops_kinds() {
        assert_eq!(parse_ks("4,1,2"), Ok(vec![1, 2, 4]));
        assert_eq!(parse_ks("1..3,10"), Ok(vec![1, 2, 3, 10]));
        assert!(parse_ks("0").is_err());
        assert!(parse_ks("3..1").is_err());
        assert!(parse_ks("100000").is_err());
        let b = parse_blocks("4..64M").unwrap();
        assert_eq!(b.len(), 25);
        assert_eq!(b[0], BlockSize::Bytes(4));
        assert_eq!(b[24], BlockSize::Bytes(64 << 20));
        assert_eq!(
            parse_blocks("1M,64K,file"),
            Ok(vec![BlockSize::Bytes(65536), BlockSize::Bytes(1 << 20), BlockSize::WholeFile])
        );
        assert_eq!(parse_blocks("-"), Ok(vec![]));
        assert_eq!(parse_blocks(""), Ok(vec![]));
        assert!(parse_blocks("3..64").is_err());
        assert!(parse_blocks("64..4").is_err());
        assert!(parse_blocks("0").is_err());
        assert!(parse_blocks("12X").is_err());
        assert_eq!(parse_ops("write,read"), Ok(vec![Op::Write, Op::Read]));
        assert!(parse_ops("append").is_err());
        assert_eq!(parse_kinds("all").unwrap(), StreamKind::ALL.to_vec());
        assert_eq!(parse_kinds("mmap,Syscall"), Ok(vec![StreamKind::Syscall, StreamKind::Mmap]));
        assert!(parse_kinds("mmap,fast").is_err());
    }

    #[test]
    fn good_file() {
        let text = "\
# a campaign
kind;ops;N list;k list;B range;reps

buffered;read,write;1e3,1e6,1e8;1,2,4;4..64M;3   # the big one
syscall;read;1000;1;-;2
stdio;write;1e3;1..3;;1;
mmap;read;1e4;1;64K,1M,file;1
";
        let s = parse(text).unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(s[0].kind, StreamKind::Buffered);
        assert_eq!(s[0].ops, vec![Op::Write, Op::Read]);
        assert_eq!(s[0].n, vec![1000, 1_000_000, 100_000_000]);
        assert_eq!(s[0].k, vec![1, 2, 4]);
        assert_eq!(s[0].blocks.len(), 25);
        assert_eq!(s[0].reps, 3);
        assert_eq!(s[1].blocks, vec![]);
        assert_eq!(s[2].k, vec![1, 2, 3]);
        assert_eq!(s[3].blocks.last(), Some(&BlockSize::WholeFile));
    }

    #[test]
    fn bad_lines_name_file_line_and_field() {
        let msg = |t: &str| parse(t).unwrap_err().to_string();
        let h = "kind;ops;N;k;B;reps\n";
        assert_eq!(
            msg(&format!("{h}buffered;read;1e3;1;4K\n")),
            "p.csv:2: expected 6 ';'-separated fields (kind;ops;N list;k list;B range;reps), found 5"
        );
        assert!(msg(&format!("{h}fast;read;1e3;1;4K;1"))
            .starts_with("p.csv:2: field 1 (kind): unknown stream kind 'fast'"));
        assert!(msg(&format!("#c\n{h}\nbuffered;read;1x3;1;4K;1"))
            .starts_with("p.csv:4: field 3 (N list): invalid count '1x3'"));
        assert!(msg(&format!("{h}buffered;read;1e3;0;4K;1")).starts_with("p.csv:2: field 4 (k list)"));
        assert!(msg(&format!("{h}buffered;read;1e3;1;5..64;1")).starts_with("p.csv:2: field 5 (B range)"));
        assert!(msg(&format!("{h}buffered;read;1e3;1;-;1")).contains("buffered uses a block size B"));
        assert!(msg(&format!("{h}buffered;read;1e3;1;4K;0")).starts_with("p.csv:2: field 6 (reps)"));
        assert!(msg(&format!("{h}buffered;peek;1e3;1;4K;1")).starts_with("p.csv:2: field 2 (ops)"));
        assert!(msg("buffered;read;1e3;1;4K;1").contains("expected a header line"));
        assert!(msg(h).contains("no rows"));
        assert!(msg("").contains("no rows"));
    }

    #[test]
    fn missing_file_is_an_io_error() {
        let e = read_params(Path::new("/nonexistent/params.csv")).unwrap_err();
        match e {
            Error::Io(io) => assert_eq!(io.kind(), &emsort_io::ErrorKind::NotFound),
            other => panic!("{other}"),
        }
    }
}

/// Fuzz tests of stream campaign parameters (`PROPTEST_CASES=20000 cargo
/// test -p emsort-bench fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::fuzz::{check_error, rows, strictly_sorted, text};
    use emsort_io::test_util::{cases, within};
    use proptest::prelude::*;

    const HEADER: &str = "kind;ops;N list;k list;B range;reps";

    fn params() -> BoxedStrategy<String> {
        rows(
            HEADER,
            ";",
            vec![
                vec!["syscall", "buffered", "mmap", "Direct", "uring", "stdio", "fast", ""],
                vec!["read", "write", "read,write", "Write", "peek", "read,,write"],
                vec!["1e3", "1e3,1e6", "1000", "0", "1.5", "1e30", "2.5e3", "1_000", "1K"],
                vec!["1", "1,2,4", "1..500", "0", "501", "3..1", "2..8,16"],
                vec![
                    "-",
                    "",
                    "4..64M",
                    "1M,file",
                    "file",
                    "3..64",
                    "64..4",
                    "1..8192P",
                    "1..16384P",
                    "0",
                    "4K",
                ],
                vec!["1", "3", "0", "-1", "4294967296", "x"],
            ],
        )
    }

    fn check(sweeps: &[Sweep]) -> std::result::Result<(), TestCaseError> {
        prop_assert!(!sweeps.is_empty());
        for s in sweeps {
            prop_assert!(!s.ops.is_empty() && strictly_sorted(&s.ops));
            prop_assert!(!s.n.is_empty() && strictly_sorted(&s.n) && s.n[0] >= 1);
            prop_assert!(
                !s.k.is_empty() && strictly_sorted(&s.k) && s.k.iter().all(|&k| (1..=MAX_K).contains(&k))
            );
            prop_assert!(strictly_sorted(&s.blocks) && !s.blocks.contains(&BlockSize::Bytes(0)));
            prop_assert!(!s.kind.uses_block_size() || !s.blocks.is_empty());
            prop_assert!(s.reps >= 1);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(512)))]

        /// Any text, or rows of good and bad fields: sweeps that hold only
        /// valid values, or an error naming a line.
        #[test]
        fn fuzz_streams_params(s in prop_oneof![any::<String>(), params(),
                                                 text(&[HEADER, "buffered", ";", "\n", "1e3", "4..64M"], 24)]) {
            match within(&s, || parse_params(&s, Path::new("p.csv"))) {
                Ok(sweeps) => check(&sweeps)?,
                Err(e) => check_error(&e, &s)?,
            }
        }

        /// `a..b` block ranges: every power of two from a to b, up to 2⁶³.
        #[test]
        fn fuzz_block_ranges(a in 0u32..64, b in 0u32..64, unit in prop::sample::select(vec![("K", 10), ("M", 20), ("P", 50)])) {
            let (lo, hi) = (a.min(b), a.max(b));
            // 2^i with the unit where it divides, else in bytes.
            let spell = |i: u32| if i >= unit.1 { format!("{}{}", 1u64 << (i - unit.1), unit.0) } else { (1u64 << i).to_string() };
            let s = format!("{}..{}", spell(lo), spell(hi));
            let want: Vec<BlockSize> = (lo..=hi).map(|i| BlockSize::Bytes(1 << i)).collect();
            prop_assert_eq!(within(&s, || parse_blocks(&s)), Ok(want), "{}", s);
        }
    }

    /// Inputs the fuzz tests found, kept as plain regression tests.
    #[test]
    fn fuzz_regressions() {
        // A range up to 2⁶³ doubled past it: an overflow panic in debug
        // builds, and in release a wrap to 0 that doubled forever, pushing
        // zeros without end.
        let b = parse_blocks("1..8192P").unwrap();
        assert_eq!(b.len(), 64);
        assert_eq!(b.last(), Some(&BlockSize::Bytes(1 << 63)));
        assert_eq!(parse_blocks("8192P..8192P"), Ok(vec![BlockSize::Bytes(1 << 63)]));
        assert!(parse_blocks("1..16384P").is_err());
    }
}
