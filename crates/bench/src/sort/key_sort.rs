//! The sorts by key of the keys experiment ([`KeySort`]), each on the
//! data sets it applies to ([`KeySort::data_sets`]), and their
//! parameter-file syntax ([`parse_keys`]).

use std::str::FromStr;

use super::data_set::DataSet;

/// One sort by key of the keys experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeySort {
    /// `-t, -k3,3n`: by amount, numerically.
    K3n,
    /// `-t, -k2,2 -k3,3nr`: by category, then amount descending.
    K2K3nr,
    /// `-u`: whole lines, each once.
    U,
    /// `-t, -k1,1n -u`: one line per id, by id.
    K1nU,
    /// No option: whole lines (what emsort sorts without keys); on
    /// `csv` and on `words` (in the point's locale).
    Plain,
    /// `--csv --header -k amount:n`: a CSV export by its `amount` column,
    /// numerically.
    AmountN,
    /// `--csv --header -k name`: a CSV export by its quoted `name` column.
    Name,
    /// `--jsonl -k .ts:n`: JSON lines by `ts`, numerically.
    TsN,
    /// `--jsonl -k .amount:n`: JSON lines by `amount`, numerically.
    JsonAmountN,
}

impl KeySort {
    /// The four sorts of issue 17's performance bar (`all`).
    pub const ALL: [KeySort; 4] = [KeySort::K3n, KeySort::K2K3nr, KeySort::U, KeySort::K1nU];

    /// Every sort.
    pub const EVERY: [KeySort; 9] = [
        KeySort::K3n,
        KeySort::K2K3nr,
        KeySort::U,
        KeySort::K1nU,
        KeySort::Plain,
        KeySort::AmountN,
        KeySort::Name,
        KeySort::TsN,
        KeySort::JsonAmountN,
    ];

    /// The name in lists and parameter files (`k3n`, `k2-k3nr`, `u`,
    /// `k1n-u`, `plain`; on records, emsort's key: `amount:n`, `name`,
    /// `.ts:n`, `.amount:n`); also the DuckDB and Polars drivers' query
    /// name.
    pub fn name(self) -> &'static str {
        match self {
            KeySort::K3n => "k3n",
            KeySort::K2K3nr => "k2-k3nr",
            KeySort::U => "u",
            KeySort::K1nU => "k1n-u",
            KeySort::Plain => "plain",
            KeySort::AmountN => "amount:n",
            KeySort::Name => "name",
            KeySort::TsN => ".ts:n",
            KeySort::JsonAmountN => ".amount:n",
        }
    }

    /// The data sets the sort applies to.
    pub fn data_sets(self) -> &'static [DataSet] {
        match self {
            KeySort::K3n | KeySort::K2K3nr | KeySort::U | KeySort::K1nU => &[DataSet::Csv],
            KeySort::Plain => &[DataSet::Csv, DataSet::Words],
            KeySort::AmountN | KeySort::Name => &[DataSet::CsvExport],
            KeySort::TsN | KeySort::JsonAmountN => &[DataSet::Jsonl],
        }
    }

    /// The sorts a data set runs when its row names none: issue 17's
    /// four on `csv`, both columns of a CSV export, `.ts:n` on JSON
    /// lines, whole lines of words.
    pub fn defaults(data: DataSet) -> &'static [KeySort] {
        match data {
            DataSet::Csv => &KeySort::ALL,
            DataSet::CsvExport => &[KeySort::AmountN, KeySort::Name],
            DataSet::Jsonl => &[KeySort::TsN],
            DataSet::Words => &[KeySort::Plain],
        }
    }

    /// The options given to emsort (and, on `csv` and `words`, to GNU
    /// sort and uutils sort).
    pub fn args(self) -> &'static [&'static str] {
        match self {
            KeySort::K3n => &["-t,", "-k3,3n"],
            KeySort::K2K3nr => &["-t,", "-k2,2", "-k3,3nr"],
            KeySort::U => &["-u"],
            KeySort::K1nU => &["-t,", "-k1,1n", "-u"],
            KeySort::Plain => &[],
            KeySort::AmountN => &["--csv", "--header", "-k", "amount:n"],
            KeySort::Name => &["--csv", "--header", "-k", "name"],
            KeySort::TsN => &["--jsonl", "-k", ".ts:n"],
            KeySort::JsonAmountN => &["--jsonl", "-k", ".amount:n"],
        }
    }

    /// The options as one string (`-t, -k3,3n`; `plain` for none): the
    /// `keys` column.
    pub fn label(self) -> String {
        match self {
            KeySort::Plain => "plain".into(),
            k => k.args().join(" "),
        }
    }

    /// Whether the sort drops lines (`-u`).
    pub fn unique(self) -> bool {
        matches!(self, KeySort::U | KeySort::K1nU)
    }

    /// DuckDB's equivalent, as the README shows it.
    pub fn duckdb_query(self) -> &'static str {
        match self {
            KeySort::K3n => "SELECT * … ORDER BY amount",
            KeySort::K2K3nr => "SELECT * … ORDER BY category, amount DESC",
            KeySort::U => "SELECT DISTINCT line … ORDER BY line",
            KeySort::K1nU => "SELECT DISTINCT ON (id) * … ORDER BY id",
            KeySort::Plain => "SELECT line … ORDER BY line",
            KeySort::AmountN => "SELECT * FROM read_csv(IN, header=true, …) ORDER BY amount",
            KeySort::Name => "SELECT * FROM read_csv(IN, header=true, …) ORDER BY name",
            KeySort::TsN => {
                "SELECT * FROM read_json(IN, format='newline_delimited', …) ORDER BY TRY_CAST(ts AS DOUBLE)"
            }
            KeySort::JsonAmountN => {
                "SELECT * FROM read_json(IN, format='newline_delimited', …) ORDER BY TRY_CAST(amount AS DOUBLE)"
            }
        }
    }

    /// Polars' equivalent (streaming), as the README shows it; `None`
    /// where Polars does not run.
    pub fn polars_query(self) -> Option<&'static str> {
        match self {
            KeySort::AmountN => Some("pl.scan_csv(IN).sort(\"amount\").sink_csv(OUT)"),
            KeySort::Name => Some("pl.scan_csv(IN).sort(\"name\").sink_csv(OUT)"),
            KeySort::TsN => Some("pl.scan_ndjson(IN).sort(ts as a number).sink_ndjson(OUT)"),
            KeySort::JsonAmountN => Some("pl.scan_ndjson(IN).sort(\"amount\").sink_ndjson(OUT)"),
            _ => None,
        }
    }

    /// xan's equivalent on a CSV export, the key arguments of `xan
    /// sort`; `None` where xan does not run.
    pub fn xan_args(self) -> Option<&'static [&'static str]> {
        match self {
            KeySort::AmountN => Some(&["-N", "-s", "amount"]),
            KeySort::Name => Some(&["-s", "name"]),
            _ => None,
        }
    }
}

impl FromStr for KeySort {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<KeySort, String> {
        let t = s.trim();
        KeySort::EVERY.iter().copied().find(|k| k.name().eq_ignore_ascii_case(t)).ok_or_else(|| {
            format!(
                "unknown key sort '{s}' (expected k3n = -t, -k3,3n; k2-k3nr = -t, -k2,2 -k3,3nr; \
                 u = -u; k1n-u = -t, -k1,1n -u; plain; on csv-export amount:n or name; on jsonl .ts:n \
                 or .amount:n; or all)"
            )
        })
    }
}

/// Parses key sorts: `k3n,u` or `all` (the four of [`KeySort::ALL`]).
///
/// ```
/// use emsort_bench::sort::{parse_keys, KeySort};
/// assert_eq!(parse_keys("u,k3n,u"), Ok(vec![KeySort::K3n, KeySort::U]));
/// assert_eq!(parse_keys("all").unwrap().len(), 4);
/// assert!(parse_keys("k9").is_err());
/// ```
pub fn parse_keys(s: &str) -> std::result::Result<Vec<KeySort>, String> {
    let mut v = Vec::new();
    for item in crate::list::split_list(s)? {
        if item.eq_ignore_ascii_case("all") {
            v.extend(KeySort::ALL);
        } else {
            v.push(item.parse()?);
        }
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}
