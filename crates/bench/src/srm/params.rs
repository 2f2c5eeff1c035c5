//! Parameter files of the SRM-versus-DSM campaign.
//!
//! A parameter file is a header line, then one row per [`Grid`], eight
//! `;`-separated fields (`;`, because an emulated disk is written
//! `BANDWIDTH,LATENCY`):
//!
//! ```text
//! # comments start with '#', blank lines are skipped
//! format;n;memory;block;disks;methods;emulate;reps
//! rec:104:0:8;1e6,2e6,4e6;15M,24M;256K;6;dsm,srm;;1
//! rec:104:0:8;1e6,2e6,4e6;15M,24M;256K;6;dsm,srm;60M,1ms;1
//! rec:104:0:8;4e6;24M;256K;1,2,3,4,6,8;dsm,srm;;1
//! ```
//!
//! | field   | syntax |
//! |---------|--------|
//! | format  | a fixed-size format: `rec:SIZE:OFF:LEN` (the paper's `rec:104:0:8`), `u32`, `u64` … |
//! | n       | numbers of records N: `1e6,2e6` or `1000000` |
//! | memory  | memory budgets M with K/M/G suffixes (powers of 1024) |
//! | block   | striping block sizes B with K/M/G suffixes |
//! | disks   | numbers of disks D: `6`, `1,2,4`, `1..8` |
//! | methods | `plain`, `dsm`, `srm` |
//! | emulate | empty or `-`: the disks as they are; `BANDWIDTH,LATENCY` (`60M,1ms`): every disk served at that bandwidth (bytes/s) and per-request latency |
//! | reps    | repetitions of each point |
//!
//! A point listed twice runs once, with the larger reps. Errors name the
//! file, the line and the field.

use std::path::Path;

use emsort_io::parse_size;
use emsort_sort::{Format, MethodKind};

use crate::list::{parse_int_list, split_list};
use crate::{Error, Result};

/// Largest D accepted (each disk is a directory with a file per run).
pub const MAX_DISKS: usize = 64;

/// The methods a campaign can run, in the order tables list them.
pub const METHODS: [MethodKind; 3] = MethodKind::ALL;

/// One row of a parameter file: every combination of its lists is a point.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Data formats (fixed-size).
    pub formats: Vec<Format>,
    /// Numbers of records N.
    pub items: Vec<u64>,
    /// Memory budgets M in bytes.
    pub memories: Vec<u64>,
    /// Striping block sizes B in bytes.
    pub blocks: Vec<u64>,
    /// Numbers of disks D.
    pub disks: Vec<usize>,
    /// Methods (`plain`, `dsm`, `srm`).
    pub methods: Vec<MethodKind>,
    /// The emulated disk (`BANDWIDTH,LATENCY`), or `None` for the disks as
    /// they are.
    pub emulate: Option<String>,
    /// Repetitions of each point.
    pub reps: u32,
}

/// Parses methods: `dsm,srm`; each one of [`METHODS`], case-insensitive.
///
/// ```
/// use emsort_bench::srm::parse_methods;
/// use emsort_sort::MethodKind;
/// assert_eq!(parse_methods("SRM, dsm"), Ok(vec![MethodKind::Dsm, MethodKind::Srm]));
/// assert!(parse_methods("fast").unwrap_err().contains("plain, dsm or srm"));
/// ```
pub fn parse_methods(s: &str) -> std::result::Result<Vec<MethodKind>, String> {
    let mut v: Vec<MethodKind> = Vec::new();
    for m in split_list(s)? {
        let m = m.to_ascii_lowercase();
        let Ok(kind) = m.parse::<MethodKind>() else {
            return Err(format!("unknown method '{m}' (expected plain, dsm or srm)"));
        };
        if !v.contains(&kind) {
            v.push(kind);
        }
    }
    v.sort_by_key(|m| METHODS.iter().position(|x| x == m));
    Ok(v)
}

/// Parses the emulate field: empty, `-` or `none` is `None`; else an
/// emulated disk `BANDWIDTH,LATENCY` as `emsort sort --emulate-disk` takes
/// it ([`DiskModel`](emsort_io::disks::DiskModel): `60M,1ms`, `1G,200us`),
/// kept as written (without blanks).
///
/// ```
/// use emsort_bench::srm::parse_emulate;
/// assert_eq!(parse_emulate(" "), Ok(None));
/// assert_eq!(parse_emulate("60M, 1ms"), Ok(Some("60M,1ms".to_string())));
/// assert!(parse_emulate("60M").is_err());
/// ```
pub fn parse_emulate(s: &str) -> std::result::Result<Option<String>, String> {
    let t = s.trim();
    if t.is_empty() || t == "-" || t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    emsort_io::disks::DiskModel::parse(t)?;
    Ok(Some(t.split(',').map(str::trim).collect::<Vec<_>>().join(",")))
}

/// Parses numbers of disks: `6`, `1,2,4`, `1..8`, each in 1..=[`MAX_DISKS`].
pub fn parse_disks(s: &str) -> std::result::Result<Vec<usize>, String> {
    Ok(parse_int_list(s, "D", 1, MAX_DISKS as u64)?.into_iter().map(|d| d as usize).collect())
}

fn parse_sizes(s: &str, what: &str) -> std::result::Result<Vec<u64>, String> {
    let mut v = Vec::new();
    for item in split_list(s)? {
        let b = parse_size(item)?;
        if b == 0 {
            return Err(format!("{what} '{item}' must be at least 1 byte"));
        }
        v.push(b);
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Parses a parameter file's text (see the module docs); `path` names it
/// in errors.
pub fn parse_params(text: &str, path: &Path) -> Result<Vec<Grid>> {
    let mut grids = Vec::new();
    let mut header_seen = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !header_seen {
            header_seen = true;
            continue;
        }
        let err = |msg: String| Error::Params { path: path.to_path_buf(), line: i + 1, msg };
        let fields: Vec<&str> = line.split(';').collect();
        if fields.len() != 8 {
            return Err(err(format!(
                "expected 8 ';'-separated fields (format;n;memory;block;disks;methods;emulate;reps), found {}",
                fields.len()
            )));
        }
        fn field<T>(name: &str, r: std::result::Result<T, String>, path: &Path, line: usize) -> Result<T> {
            r.map_err(|m| Error::Params { path: path.to_path_buf(), line, msg: format!("{name}: {m}") })
        }
        let line_no = i + 1;
        let mut formats = Vec::new();
        for f in field("format", split_list(fields[0]), path, line_no)? {
            let f: Format = field("format", f.parse(), path, line_no)?;
            if f.item_size().is_none() {
                return Err(err(format!("format: '{f}' has no fixed record size (n counts records)")));
            }
            if !formats.contains(&f) {
                formats.push(f);
            }
        }
        let items = field(
            "n",
            split_list(fields[1]).and_then(|v| {
                let mut n = v
                    .into_iter()
                    .map(crate::streams::parse_count)
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                n.sort_unstable();
                n.dedup();
                Ok(n)
            }),
            path,
            line_no,
        )?;
        let memories = field("memory", parse_sizes(fields[2], "memory"), path, line_no)?;
        let blocks = field("block", parse_sizes(fields[3], "block"), path, line_no)?;
        let disks = field("disks", parse_disks(fields[4]), path, line_no)?;
        let methods = field("methods", parse_methods(fields[5]), path, line_no)?;
        let emulate = field("emulate", parse_emulate(fields[6]), path, line_no)?;
        let reps: u32 = match fields[7].trim().parse() {
            Ok(r) if r >= 1 => r,
            _ => return Err(err(format!("reps: invalid '{}' (expected a number ≥ 1)", fields[7].trim()))),
        };
        grids.push(Grid { formats, items, memories, blocks, disks, methods, emulate, reps });
    }
    if grids.is_empty() {
        return Err(Error::Params {
            path: path.to_path_buf(),
            line: 1,
            msg: "no grid row after the header".into(),
        });
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

    #[test]
    fn parses_rows_and_names_bad_fields() {
        let text = "# c\nformat;n;memory;block;disks;methods;emulate;reps\n\
                    rec:104:0:8;2e6,1e6;24M,15M;256K;6;srm,dsm;;1\n\
                    rec:104:0:8;4e6;24M;256K;1..3,6;dsm,srm;60M,1ms;2\n";
        let g = parse_params(text, Path::new("p.csv")).unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].items, [1_000_000, 2_000_000]);
        assert_eq!(g[0].memories, [15 << 20, 24 << 20]);
        assert_eq!(g[0].blocks, [256 << 10]);
        assert_eq!(g[0].methods, [MethodKind::Dsm, MethodKind::Srm]);
        assert_eq!(g[0].emulate, None);
        assert_eq!(g[1].disks, [1, 2, 3, 6]);
        assert_eq!(g[1].emulate.as_deref(), Some("60M,1ms"));
        assert_eq!(g[1].reps, 2);

        let bad =
            |row: &str| parse_params(&format!("h\n{row}\n"), Path::new("p.csv")).unwrap_err().to_string();
        assert!(bad("lines;1e6;1M;16K;2;srm;;1").contains("p.csv:2: format: 'lines' has no fixed"));
        assert!(bad("u32;1e6;1M;16K;2;srm;;").contains("reps"));
        assert!(bad("u32;1e6;1M;16K;0;srm;;1").contains("disks: D = 0 out of range"));
        assert!(bad("u32;1e6;1M;16K;2;quick;;1").contains("methods: unknown method 'quick'"));
        assert!(bad("u32;1e6;1M;16K;2;srm;fast;1").contains("emulate: invalid disk model 'fast'"));
        assert!(bad("u32;1e6;1M;16K;2;srm;1").contains("expected 8"));
        assert!(bad("u32;x;1M;16K;2;srm;;1").contains("p.csv:2: n:"));
        assert!(parse_params("h\n", Path::new("e")).unwrap_err().to_string().contains("no grid row"));
    }

    #[test]
    fn emulate_values() {
        assert_eq!(parse_emulate("-"), Ok(None));
        assert_eq!(parse_emulate("100M,5ms"), Ok(Some("100M,5ms".into())));
        assert_eq!(parse_emulate("1G,250us"), Ok(Some("1G,250us".into())));
        assert!(parse_emulate("0,1ms").is_err());
        assert!(parse_emulate("60M,ms").is_err());
        assert!(parse_emulate("60M,5").is_err());
    }

    #[test]
    fn shipped_parameter_files_parse() {
        for (name, text) in
            [("srm-full.csv", super::super::FULL_PARAMS), ("srm-quick.csv", super::super::QUICK_PARAMS)]
        {
            let g = parse_params(text, Path::new(name)).unwrap();
            assert!(g.iter().all(|g| g.methods == [MethodKind::Dsm, MethodKind::Srm]), "{name}");
        }
    }
}

/// Fuzz tests of SRM campaign parameters (`PROPTEST_CASES=20000 cargo test
/// -p emsort-bench fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::fuzz::{check_error, rows, strictly_sorted, text};
    use emsort_io::test_util::{cases, within};
    use proptest::prelude::*;

    const HEADER: &str = "format;n;memory;block;disks;methods;emulate;reps";

    fn params() -> BoxedStrategy<String> {
        rows(
            HEADER,
            ";",
            vec![
                vec!["rec:104:0:8", "u32,u64", "lines", "rec:8:18446744073709551615:1", "f32", ""],
                vec!["1e6", "2e6,1e6", "0", "1.5", "1e30", "0e20", "x"],
                vec!["15M,24M", "0", "16384P", "1K"],
                vec!["256K", "0", "1", "1.5"],
                vec!["6", "1..8", "0", "65", "1,2,4"],
                vec!["dsm,srm", "SRM", "plain", "quick", ""],
                vec![
                    "",
                    "-",
                    "none",
                    "60M,1ms",
                    "60M, 1ms",
                    "0,1ms",
                    "60M",
                    "1,18446744073709551615ns",
                    "1G,1e400s",
                ],
                vec!["1", "2", "0", " 3 ", "x"],
            ],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(512)))]

        /// Any text, or rows of good and bad fields: grids of valid values
        /// only, or an error naming a line.
        #[test]
        fn fuzz_srm_params(s in prop_oneof![any::<String>(), params(),
                                            text(&[HEADER, "rec:104:0:8", ";", "\n", "1e6", "dsm"], 24)]) {
            match within(&s, || parse_params(&s, Path::new("p.csv"))) {
                Ok(grids) => {
                    prop_assert!(!grids.is_empty());
                    for g in grids {
                        prop_assert!(!g.formats.is_empty() && g.formats.iter().all(|f| f.item_size().is_some()));
                        prop_assert!(!g.items.is_empty() && strictly_sorted(&g.items) && g.items[0] >= 1);
                        prop_assert!(strictly_sorted(&g.memories) && strictly_sorted(&g.blocks));
                        prop_assert!(g.memories[0] >= 1 && g.blocks[0] >= 1);
                        prop_assert!(strictly_sorted(&g.disks) && g.disks.iter().all(|d| (1..=MAX_DISKS).contains(d)));
                        prop_assert!(!g.methods.is_empty() && g.methods.iter().all(|m| METHODS.contains(m)));
                        if let Some(e) = &g.emulate {
                            prop_assert!(emsort_io::disks::DiskModel::parse(e).is_ok(), "{}", e);
                        }
                        prop_assert!(g.reps >= 1);
                    }
                }
                Err(e) => check_error(&e, &s)?,
            }
        }
    }
}
