//! A key of JSON lines (`--jsonl`): a path into each line's value, in a
//! small subset of jq's path syntax, and its modifiers.
//!
//! ```text
//! KEY   = PATH [ ":" MODS ]          -k .user.id   -k .ts:n   -k '.tags[0]:r'
//! PATH  = "." | STEP+                 "." alone: the whole value
//! STEP  = "." NAME                    .user          NAME = [A-Za-z_][A-Za-z0-9_]*
//!       | "." STRING | ".[" STRING "]" | "[" STRING "]"   ."odd key"  .["a.b"]   (a JSON string)
//!       | "[" INT "]" | ".[" INT "]"  .tags[0]  .tags[-1] (from the end, as jq)
//! MODS  = { "n" | "r" }               n: numeric; r: reversed
//! ```
//!
//! A missing member or element, or a step into a value that is not an
//! object (an array), is `null`, as jq's `.a.b` on `{"a": 1}` would fail
//! but `sort_by` users write `.a?.b?` for. How a key's value orders is in
//! the module docs of `crate::json`.

use crate::json::Step;

/// One `--jsonl` key: where its value is and how it compares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonKey {
    /// The steps from the line's value (empty: the whole value).
    pub path: Vec<Step>,
    /// `n`: by number (a JSON number, or a string holding one); anything
    /// else before every number.
    pub numeric: bool,
    /// `r`: this key descending.
    pub reverse: bool,
}

impl JsonKey {
    /// Whether a `-k` argument is a JSON path (it starts with `.`).
    pub fn is_path(arg: &str) -> bool {
        arg.starts_with('.')
    }

    /// Parses `PATH[:MODS]` (see the module docs); `Err` says what is
    /// wrong, naming the argument.
    pub fn parse(arg: &str) -> Result<JsonKey, String> {
        let why = |w: &str| format!("invalid JSON path key '{arg}': {w}");
        let bad = |w: &str| Err(why(w));
        let b = arg.as_bytes();
        if b.first() != Some(&b'.') {
            return bad("a path starts with '.' (-k .user.id)");
        }
        let mut key = JsonKey::default();
        let mut i = 1;
        // "." alone (or ".:n") is the whole value.
        if !matches!(b.get(1), None | Some(b':')) {
            i = 0;
            while i < b.len() && b[i] != b':' {
                let step;
                (step, i) = match (b[i], b.get(i + 1)) {
                    (b'.', Some(b'[')) | (b'[', _) => {
                        let from = if b[i] == b'.' { i + 2 } else { i + 1 };
                        let (s, end) = bracket(arg, from).map_err(|e| why(&e))?;
                        (s, end)
                    }
                    (b'.', Some(b'"')) => {
                        let (s, end) = string(arg, i + 1).map_err(|e| why(&e))?;
                        (Step::Key(s), end)
                    }
                    (b'.', Some(c)) if c.is_ascii_alphabetic() || *c == b'_' => {
                        let n = b[i + 1..]
                            .iter()
                            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                            .count();
                        (Step::Key(arg[i + 1..i + 1 + n].to_string()), i + 1 + n)
                    }
                    _ => {
                        return bad(&format!(
                            "at '{}': a step is .name, .\"name\", .[\"name\"] or [N]",
                            &arg[i..]
                        ))
                    }
                };
                key.path.push(step);
            }
        }
        if let Some(mods) = arg.get(i..).and_then(|m| m.strip_prefix(':')) {
            for c in mods.chars() {
                match c {
                    'n' => key.numeric = true,
                    'r' => key.reverse = true,
                    c => return bad(&format!("unknown modifier '{c}' (n: numeric, r: reverse)")),
                }
            }
        } else if i < b.len() {
            return bad("a path ends at the end or at ':' before its modifiers");
        }
        Ok(key)
    }
}

/// The step in brackets from `from` (just after `[`): an index or a
/// string; and where it ends (after `]`).
fn bracket(arg: &str, from: usize) -> Result<(Step, usize), String> {
    if arg.as_bytes().get(from) == Some(&b'"') {
        let (s, end) = string(arg, from)?;
        return match arg.as_bytes().get(end) {
            Some(b']') => Ok((Step::Key(s), end + 1)),
            _ => Err("a '[' is closed by ']'".to_string()),
        };
    }
    let close = arg[from..].find(']').ok_or("a '[' is closed by ']'")? + from;
    let n: i64 = arg[from..close].parse().map_err(|_| format!("'{}' is not an index", &arg[from..close]))?;
    Ok((Step::Index(n), close + 1))
}

/// The JSON string whose opening quote is at `from`, unescaped, and where
/// it ends (after its closing quote).
fn string(arg: &str, from: usize) -> Result<(String, usize), String> {
    let b = arg.as_bytes();
    let mut i = from + 1;
    while i < b.len() && b[i] != b'"' {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    if i >= b.len() {
        return Err("a quoted name has no closing quote".to_string());
    }
    let s = serde_json::from_str(&arg[from..=i])
        .map_err(|e| format!("the quoted name is not a JSON string: {e}"))?;
    Ok((s, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> Step {
        Step::Key(s.to_string())
    }

    #[test]
    fn parses_the_documented_forms() {
        let p = |a: &str| JsonKey::parse(a).unwrap();
        assert_eq!(p("."), JsonKey::default());
        assert_eq!(p(".:nr"), JsonKey { path: vec![], numeric: true, reverse: true });
        assert_eq!(p(".user.id").path, vec![k("user"), k("id")]);
        assert_eq!(p(".ts:n"), JsonKey { path: vec![k("ts")], numeric: true, reverse: false });
        assert_eq!(p(".tags[0]").path, vec![k("tags"), Step::Index(0)]);
        assert_eq!(p(".tags[-1]:r").path, vec![k("tags"), Step::Index(-1)]);
        assert_eq!(p(".[2][0]").path, vec![Step::Index(2), Step::Index(0)]);
        assert_eq!(p(".\"a b:c\".x").path, vec![k("a b:c"), k("x")]);
        assert_eq!(p(".[\"a.b\"][\"\\u00e9\\\"\"]:n").path, vec![k("a.b"), k("é\"")]);
        assert_eq!(p("._x1.y_").path, vec![k("_x1"), k("y_")]);
    }

    #[test]
    fn refuses_what_is_not_a_path() {
        for a in ["user", ".user:x", ".1a", ".a..b", ".a[", ".a[x]", ".\"a", ".a b", ".[\"a\"", ".a-b"] {
            let e = JsonKey::parse(a).unwrap_err();
            assert!(e.starts_with(&format!("invalid JSON path key '{a}'")), "{e}");
        }
        assert!(JsonKey::is_path(".a") && !JsonKey::is_path("2,2n"));
    }
}
