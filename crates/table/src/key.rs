//! A sort key of a table: a column by name, its direction and where its
//! nulls go (`-k NAME[:MODS]`).

use std::fmt;

/// One key: a top-level column, ascending or descending, nulls first or
/// last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableKey {
    /// The column's name.
    pub column: String,
    /// Descending (`:desc`, `:r`).
    pub descending: bool,
    /// Nulls before every value (`:nulls_first`); else after (`:nulls_last`,
    /// the default, as DuckDB and PostgreSQL put them for ascending keys).
    pub nulls_first: bool,
}

impl TableKey {
    /// An ascending key on `column`, nulls last.
    pub fn asc(column: &str) -> TableKey {
        TableKey { column: column.to_string(), descending: false, nulls_first: false }
    }

    /// Parses `NAME[:MODS]`: MODS are words separated by commas — `asc`,
    /// `desc` (or `r`), `nulls_first`, `nulls_last`. A name that holds a
    /// `:` followed by something else is taken whole.
    pub fn parse(spec: &str) -> Result<TableKey, String> {
        let mut key = TableKey::asc(spec);
        if let Some((name, mods)) = spec.rsplit_once(':') {
            let mut k = TableKey::asc(name);
            let mut all = true;
            for m in mods.split(',') {
                match m {
                    "asc" => k.descending = false,
                    "desc" | "r" => k.descending = true,
                    "nulls_first" => k.nulls_first = true,
                    "nulls_last" => k.nulls_first = false,
                    _ => all = false,
                }
            }
            if all {
                key = k;
            } else if mods.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ',')
                && !mods.is_empty()
            {
                return Err(format!(
                    "-k {spec}: unknown modifier in '{mods}' (a table's key is NAME[:MODS], MODS from asc, \
                     desc, r, nulls_first, nulls_last, separated by commas)"
                ));
            }
        }
        if key.column.is_empty() {
            return Err(format!("-k {spec}: no column name"));
        }
        Ok(key)
    }
}

impl fmt::Display for TableKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} nulls {}",
            self.column,
            if self.descending { "desc" } else { "asc" },
            if self.nulls_first { "first" } else { "last" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse() {
        assert_eq!(TableKey::parse("ts").unwrap(), TableKey::asc("ts"));
        let k = TableKey::parse("user:desc,nulls_first").unwrap();
        assert!(k.descending && k.nulls_first && k.column == "user");
        assert!(TableKey::parse("a:r").unwrap().descending);
        assert!(TableKey::parse("a:x").is_err());
        assert_eq!(TableKey::parse("time: 12").unwrap().column, "time: 12");
        assert!(TableKey::parse(":desc").is_err());
    }
}
