//! The inputs of the keys experiment ([`DataSet`]): which generator makes
//! them, how their records are counted, and which peers can read them.
//!
//! | data set | generator | records | peers |
//! |---|---|---|---|
//! | `csv` | `emsort gen --format csv` (`id,category,amount,date` lines) | lines | GNU sort, uutils sort, DuckDB |
//! | `csv-export` | `emsort gen --format csv-export` (a header, quoted fields with commas, doubled quotes and newlines) | CSV records after the header (the `csv` crate's count) | DuckDB, Polars, xan |
//! | `jsonl` | `emsort gen --format jsonl` (JSON events, one a line) | lines | DuckDB, Polars |
//! | `words` | `emsort gen --format words` (natural-language-like words, one a line) | lines | GNU sort |
//!
//! GNU sort is the reference where it can parse the input (`csv`,
//! `words`); a quoted CSV with newlines in its fields and JSON are beyond
//! it, so on `csv-export` and `jsonl` emsort's output is the reference,
//! checked on its own ([`super::keys`]).
//!
//! ```
//! use emsort_bench::sort::DataSet;
//! assert_eq!("csv-export".parse::<DataSet>(), Ok(DataSet::CsvExport));
//! assert!(DataSet::Words.gnu_sort_reads() && !DataSet::Jsonl.gnu_sort_reads());
//! ```

use std::path::Path;
use std::str::FromStr;

use emsort_sort::gen::GenSpec;

use crate::{Error, Result};

/// One kind of input of the keys experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DataSet {
    /// Typed CSV lines `id,category,amount,date` (issue 17).
    Csv,
    /// A CSV export with a header and quoted fields (issue 41).
    CsvExport,
    /// JSON lines (issue 41).
    Jsonl,
    /// Words to sort in a locale (issue 41).
    Words,
}

impl DataSet {
    /// Every data set.
    pub const ALL: [DataSet; 4] = [DataSet::Csv, DataSet::CsvExport, DataSet::Jsonl, DataSet::Words];

    /// The name in parameter files and the rows' `format` column: the
    /// `emsort gen --format` that makes it.
    pub fn name(self) -> &'static str {
        match self {
            DataSet::Csv => "csv",
            DataSet::CsvExport => "csv-export",
            DataSet::Jsonl => "jsonl",
            DataSet::Words => "words",
        }
    }

    /// About `bytes` bytes of this data set, seed 42.
    pub fn gen_spec(self, bytes: u64) -> GenSpec {
        match self {
            DataSet::Csv => GenSpec::csv_bytes(bytes),
            DataSet::CsvExport => GenSpec::csv_export_bytes(bytes),
            DataSet::Jsonl => GenSpec::jsonl_bytes(bytes),
            DataSet::Words => GenSpec::words_bytes(bytes),
        }
    }

    /// The records of a file of this data set: lines, or for a CSV
    /// export the records after the header, as the `csv` crate reads
    /// them (a parser independent of emsort's).
    pub fn count_records(self, path: &Path) -> Result<u64> {
        if self != DataSet::CsvExport {
            return count_lines(path);
        }
        let file = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
        let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(file);
        let mut record = csv::ByteRecord::new();
        let mut n = 0u64;
        loop {
            match reader.read_byte_record(&mut record) {
                Ok(true) => n += 1,
                Ok(false) => return Ok(n),
                Err(e) => return Err(Error::io("read CSV records of", path, std::io::Error::other(e))),
            }
        }
    }

    /// The records [`emsort_sort::gen::generate`] reports for this data
    /// set less the header, if any: what [`count_records`](Self::count_records)
    /// counts in the input.
    pub fn records_of_items(self, items: u64) -> u64 {
        match self {
            DataSet::CsvExport => items.saturating_sub(1),
            _ => items,
        }
    }

    /// Whether GNU sort (and uutils sort) can sort it: one record a line,
    /// no quoting.
    pub fn gnu_sort_reads(self) -> bool {
        matches!(self, DataSet::Csv | DataSet::Words)
    }

    /// Whether DuckDB runs on it (not on words: a locale's collation is
    /// not DuckDB's).
    pub fn duckdb_reads(self) -> bool {
        self != DataSet::Words
    }

    /// Whether Polars and xan run on it (the data sets of issue 41 with
    /// records; the `csv` lines have GNU sort's peers already).
    pub fn polars_reads(self) -> bool {
        matches!(self, DataSet::CsvExport | DataSet::Jsonl)
    }

    /// Whether xan runs on it (CSV with a header).
    pub fn xan_reads(self) -> bool {
        self == DataSet::CsvExport
    }
}

/// Lines (newlines) in a file.
pub fn count_lines(path: &Path) -> Result<u64> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    let mut buf = vec![0u8; 4 << 20];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(|e| Error::io("read", path, e))?;
        if k == 0 {
            return Ok(n);
        }
        n += buf[..k].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

impl std::fmt::Display for DataSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DataSet {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<DataSet, String> {
        let t = s.trim();
        DataSet::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| format!("unknown data set '{s}' (expected csv, csv-export, jsonl or words)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_peers_fit() {
        for d in DataSet::ALL {
            assert_eq!(d.name().parse::<DataSet>(), Ok(d));
            assert_eq!(d.to_string(), d.name());
        }
        assert!("json".parse::<DataSet>().unwrap_err().contains("unknown data set 'json'"));
        assert!(DataSet::Csv.duckdb_reads() && !DataSet::Words.duckdb_reads());
        assert!(DataSet::CsvExport.xan_reads() && !DataSet::Jsonl.xan_reads());
        assert!(DataSet::Jsonl.polars_reads() && !DataSet::Csv.polars_reads());
        assert_eq!(DataSet::CsvExport.records_of_items(11), 10);
        assert_eq!(DataSet::Jsonl.records_of_items(11), 11);
    }

    /// A CSV export's records are counted by a CSV parser: a quoted
    /// newline is not a record, the header is not one.
    #[test]
    fn csv_export_records_are_counted_as_csv() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("e.csv");
        std::fs::write(&p, "id,name\n1,\"a, b\"\n2,\"said \"\"x\"\"\nback\"\n").unwrap();
        assert_eq!(DataSet::CsvExport.count_records(&p).unwrap(), 2);
        assert_eq!(DataSet::Words.count_records(&p).unwrap(), 4);
        std::fs::write(&p, "id,name\n1\n").unwrap();
        assert!(DataSet::CsvExport.count_records(&p).is_err());
    }
}
