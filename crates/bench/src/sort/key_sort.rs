//! The sorts by key of the keys experiment ([`KeySort`]) and their
//! parameter-file syntax ([`parse_keys`]).

use std::str::FromStr;

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
    /// No option: whole lines (what emsort sorts without keys).
    Plain,
}

impl KeySort {
    /// The four sorts of issue 17's performance bar (`all`).
    pub const ALL: [KeySort; 4] = [KeySort::K3n, KeySort::K2K3nr, KeySort::U, KeySort::K1nU];

    /// Every sort, with `plain`.
    pub const EVERY: [KeySort; 5] =
        [KeySort::K3n, KeySort::K2K3nr, KeySort::U, KeySort::K1nU, KeySort::Plain];

    /// The name in lists and parameter files (`k3n`, `k2-k3nr`, `u`,
    /// `k1n-u`, `plain`); also the DuckDB driver's query name.
    pub fn name(self) -> &'static str {
        match self {
            KeySort::K3n => "k3n",
            KeySort::K2K3nr => "k2-k3nr",
            KeySort::U => "u",
            KeySort::K1nU => "k1n-u",
            KeySort::Plain => "plain",
        }
    }

    /// The options given to emsort, GNU sort and uutils sort.
    pub fn args(self) -> &'static [&'static str] {
        match self {
            KeySort::K3n => &["-t,", "-k3,3n"],
            KeySort::K2K3nr => &["-t,", "-k2,2", "-k3,3nr"],
            KeySort::U => &["-u"],
            KeySort::K1nU => &["-t,", "-k1,1n", "-u"],
            KeySort::Plain => &[],
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
                 u = -u; k1n-u = -t, -k1,1n -u; plain; or all)"
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
