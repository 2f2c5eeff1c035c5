//! JSON lines as the sort reads them (`--jsonl`): each line's check
//! ([`check`]), the value at a key path ([`get`]), and the normalised form of
//! a value in jq's order ([`encode`], [`encode_numeric`]); the keys of
//! [`crate::keys`] use them.
//!
//! A line is one JSON value (RFC 8259) with optional whitespace around it; a
//! CR before the newline is such whitespace (CRLF files). A line that is not
//! one value — a blank line too, as `jq` reads blank lines but GNU-like tools
//! do not — is invalid ([`check`], by `serde_json`: its grammar, UTF-8 and
//! escapes, nothing kept). A newline cannot occur inside a JSON value (it
//! must be escaped in strings), so every newline ends a line.
//!
//! Keys are found without parsing the line into a tree: [`get`] walks a
//! checked line from its start, skipping the values it does not need
//! (strings by `memchr2` from quote to backslash), and returns the bytes of
//! the value the path names; [`encode`] writes that value's form alone.
//!
//! # The form (jq's `sort_by` order)
//!
//! | value | form |
//! |---|---|
//! | `null`, `false`, `true` | `01`, `02`, `03` |
//! | number | `04`, then the IEEE double's bits made order-preserving (sign bit flipped; all bits inverted when negative; `-0` as `0`), 8 bytes big-endian |
//! | string | `05`, its unescaped UTF-8 bytes (UTF-8 order is code-point order; `\uXXXX` and surrogate pairs decoded, a lone surrogate as U+FFFD, as jq reads it) with NUL as `00 FF`, then `00 00` |
//! | array | `06`, each element's form, then `00` (every form starts with a byte ≥ `01`, so a prefix sorts first) |
//! | object | `07`, its keys in byte order each as `01` + the string bytes + `00 00`, then `00`, then the values' forms in that key order (jq compares the sorted key sets as arrays, then the values; a key given twice keeps its last value) |
//!
//! No form is a proper prefix of another, so forms can be concatenated.
//! `n` (numeric) keys: `02` + the number's 8 bytes for a number, or for a
//! string whose text (ASCII whitespace trimmed) is a JSON number; `01` for
//! anything else, which so sorts before every number (`sort -n` reads a
//! non-number as 0; below all numbers, a missing value never sits among
//! them), and ties with every other non-number.

use std::borrow::Cow;

use memchr::memchr2;

/// A step of a key path: an object's member or an array's element (negative:
/// from the end, as jq's `.[-1]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `.name`, `."name"`, `.["name"]`.
    Key(String),
    /// `[N]`.
    Index(i64),
}

/// Checks that `line` (without its newline) is one JSON value; `Err` says
/// what is wrong, as `invalid JSON: … at column N`.
pub(crate) fn check(line: &[u8]) -> Result<(), String> {
    use serde::Deserialize;
    // serde_json skips strings it ignores without checking their UTF-8.
    let text = std::str::from_utf8(line)
        .map_err(|e| format!("invalid JSON: invalid UTF-8 at column {}", e.valid_up_to() + 1))?;
    let mut de = serde_json::Deserializer::from_str(text);
    let r = serde::de::IgnoredAny::deserialize(&mut de).and_then(|_| de.end());
    r.map_err(|e| {
        let text = e.to_string();
        // serde_json says "… at line 1 column N": the file's line is ours.
        let what = text.rsplit_once(" at line ").map_or(&text[..], |(w, _)| w);
        if line.iter().all(u8::is_ascii_whitespace) {
            "invalid JSON: a blank line".to_string()
        } else {
            format!("invalid JSON: {what} at column {}", e.column())
        }
    })
}

#[inline]
fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The end (after the closing quote) of the string whose opening quote is
/// at `i`.
#[inline]
fn skip_string(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    loop {
        match memchr2(b'"', b'\\', &b[j.min(b.len())..]) {
            Some(k) if b[j + k] == b'\\' => j += k + 2,
            Some(k) => return j + k + 1,
            None => return b.len(),
        }
    }
}

/// The byte at `i`, 0 past the end (lines not checked must not panic).
#[inline]
fn byte(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// The bytes between the quotes of the string from `i` to `end`.
#[inline]
fn inner(b: &[u8], i: usize, end: usize) -> &[u8] {
    b.get(i + 1..end.saturating_sub(1)).unwrap_or_default()
}

/// The end of the value that starts at `i` (no whitespace before it).
fn skip_value(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => skip_string(b, i),
        Some(b'{' | b'[') => {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                j += 1;
            }
            j
        }
    }
}

/// A string's unescaped bytes (`raw`: between its quotes).
fn unescape(raw: &[u8]) -> Cow<'_, [u8]> {
    if memchr::memchr(b'\\', raw).is_none() {
        return Cow::Borrowed(raw);
    }
    let mut out = Vec::with_capacity(raw.len());
    unescape_into(raw, &mut out);
    Cow::Owned(out)
}

fn hex4(b: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u32::from_str_radix(s, 16).ok()
}

/// Appends the unescaped bytes of `raw` (a string's bytes between its
/// quotes) to `out`.
fn unescape_into(raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < raw.len() {
        let Some(k) = memchr::memchr(b'\\', &raw[i..]) else {
            out.extend_from_slice(&raw[i..]);
            return;
        };
        out.extend_from_slice(&raw[i..i + k]);
        i += k + 1;
        let Some(&e) = raw.get(i) else { return };
        i += 1;
        let c = match e {
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n' as u32,
            b'r' => b'\r' as u32,
            b't' => b'\t' as u32,
            b'u' => {
                let Some(u) = hex4(&raw[i..]) else { return };
                i += 4;
                if (0xD800..0xDC00).contains(&u) && raw.get(i..i + 2) == Some(b"\\u") {
                    match hex4(&raw[i + 2..]) {
                        Some(l) if (0xDC00..0xE000).contains(&l) => {
                            i += 6;
                            0x10000 + ((u - 0xD800) << 10) + (l - 0xDC00)
                        }
                        _ => 0xFFFD,
                    }
                } else if (0xD800..0xE000).contains(&u) {
                    0xFFFD
                } else {
                    u
                }
            }
            other => other as u32,
        };
        let ch = char::from_u32(c).unwrap_or('\u{FFFD}');
        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
    }
}

/// The bytes of the value at `path` in the checked JSON `line`; `None` when
/// the path is missing (or indexes into a value that is not an object or an
/// array), which orders as `null`.
pub(crate) fn get<'a>(line: &'a [u8], path: &[Step]) -> Option<&'a [u8]> {
    let mut i = ws(line, 0);
    for step in path {
        i = match (step, line.get(i)?) {
            (Step::Key(k), b'{') => member(line, i, k.as_bytes())?,
            (Step::Index(n), b'[') => element(line, i, *n)?,
            _ => return None,
        };
    }
    // Nothing there (never in a checked line): as missing.
    line.get(i..skip_value(line, i).max(i)).filter(|v| !v.is_empty())
}

/// Where the value of the last member named `key` of the object at `i`
/// starts (jq keeps a key's last value).
fn member(b: &[u8], i: usize, key: &[u8]) -> Option<usize> {
    let mut found = None;
    let mut j = ws(b, i + 1);
    if b.get(j) == Some(&b'}') {
        return None;
    }
    while j < b.len() {
        let end = skip_string(b, j);
        let raw = inner(b, j, end);
        let hit = raw == key || (memchr::memchr(b'\\', raw).is_some() && *unescape(raw) == *key);
        j = ws(b, ws(b, end) + 1); // past ':'
        if hit {
            found = Some(j);
        }
        j = ws(b, skip_value(b, j));
        if b.get(j) != Some(&b',') {
            break;
        }
        j = ws(b, j + 1);
    }
    found
}

/// Where element `n` of the array at `i` starts (negative: from the end).
fn element(b: &[u8], i: usize, n: i64) -> Option<usize> {
    let mut starts = Vec::new();
    let mut j = ws(b, i + 1);
    if b.get(j) == Some(&b']') {
        return None;
    }
    while j < b.len() {
        if n >= 0 && starts.len() as i64 == n {
            return Some(j);
        }
        starts.push(j);
        j = ws(b, skip_value(b, j));
        if b.get(j) != Some(&b',') {
            break;
        }
        j = ws(b, j + 1);
    }
    let at = if n < 0 { starts.len() as i64 + n } else { n };
    usize::try_from(at).ok().and_then(|a| starts.get(a).copied())
}

const NULL: u8 = 1;
const FALSE: u8 = 2;
const TRUE: u8 = 3;
const NUMBER: u8 = 4;
const STRING: u8 = 5;
const ARRAY: u8 = 6;
const OBJECT: u8 = 7;

/// Appends the form of `value` (the bytes [`get`] found, `None`: null) in
/// jq's order to `out` (see the module docs).
pub(crate) fn encode(value: Option<&[u8]>, out: &mut Vec<u8>) {
    match value {
        None => out.push(NULL),
        Some(v) => {
            encode_at(v, 0, out);
        }
    }
}

/// Appends the form of an `n` key's value to `out`: `02` and the number's
/// bytes for a number or a string holding one, else `01`.
pub(crate) fn encode_numeric(value: Option<&[u8]>, out: &mut Vec<u8>) {
    let number = match value {
        Some(v) if v.first() == Some(&b'"') => {
            let text = unescape(inner(v, 0, v.len()));
            let t = text.trim_ascii();
            if is_json_number(t) {
                number(t)
            } else {
                None
            }
        }
        Some(v @ [b'-' | b'0'..=b'9', ..]) => number(v),
        _ => None,
    };
    match number {
        Some(x) => {
            out.push(2);
            out.extend_from_slice(&double_form(x));
        }
        None => out.push(1),
    }
}

/// Whether `t` is a number by JSON's grammar.
fn is_json_number(t: &[u8]) -> bool {
    let digits = |i: usize| t[i.min(t.len())..].iter().take_while(|b| b.is_ascii_digit()).count();
    let mut i = usize::from(t.first() == Some(&b'-'));
    match digits(i) {
        0 => return false,
        n if t[i] == b'0' && n > 1 => return false,
        n => i += n,
    }
    if t.get(i) == Some(&b'.') {
        match digits(i + 1) {
            0 => return false,
            n => i += 1 + n,
        }
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        match digits(i) {
            0 => return false,
            n => i += n,
        }
    }
    i == t.len()
}

/// A JSON number's value as the nearest double (as jq compares them).
fn number(t: &[u8]) -> Option<f64> {
    std::str::from_utf8(t).ok()?.parse::<f64>().ok()
}

/// The double's bits in an order-preserving form (`-0` as `0`).
pub(crate) fn double_form(x: f64) -> [u8; 8] {
    let bits = if x == 0.0 { 0 } else { x.to_bits() };
    let key = if bits >> 63 == 1 { !bits } else { bits ^ (1 << 63) };
    key.to_be_bytes()
}

/// A string's bytes (unescaped) with NUL as `00 FF`, then `00 00`.
fn string_form(raw: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    unescape_into(raw, out);
    end_text(out, start);
}

/// Writes NUL as `00 FF` in `out[start..]` and ends it with `00 00`.
fn end_text(out: &mut Vec<u8>, start: usize) {
    if memchr::memchr(0, &out[start..]).is_some() {
        let s: Vec<u8> = out.drain(start..).collect();
        for b in s {
            out.push(b);
            if b == 0 {
                out.push(0xff);
            }
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// Appends the form of the value at `i` of the checked JSON `b`; returns
/// where the value ends.
fn encode_at(b: &[u8], i: usize, out: &mut Vec<u8>) -> usize {
    match byte(b, i) {
        0 => {
            // Not JSON (never in a checked line): as null.
            out.push(NULL);
            i + 1
        }
        b'n' => {
            out.push(NULL);
            i + 4
        }
        b'f' => {
            out.push(FALSE);
            i + 5
        }
        b't' => {
            out.push(TRUE);
            i + 4
        }
        b'"' => {
            let end = skip_string(b, i);
            out.push(STRING);
            string_form(inner(b, i, end), out);
            end
        }
        b'[' => {
            out.push(ARRAY);
            let mut j = ws(b, i + 1);
            if byte(b, j) != b']' {
                loop {
                    j = ws(b, encode_at(b, j, out));
                    if byte(b, j) != b',' {
                        break;
                    }
                    j = ws(b, j + 1);
                }
            }
            out.push(0);
            j + 1
        }
        b'{' => {
            out.push(OBJECT);
            // The members, sorted by key (their last value kept).
            let mut members: Vec<(Cow<[u8]>, usize)> = Vec::new();
            let mut j = ws(b, i + 1);
            if byte(b, j) != b'}' {
                loop {
                    let end = skip_string(b, j);
                    let key = unescape(inner(b, j, end));
                    j = ws(b, ws(b, end) + 1);
                    members.push((key, j));
                    j = ws(b, skip_value(b, j));
                    if byte(b, j) != b',' {
                        break;
                    }
                    j = ws(b, j + 1);
                }
            }
            members.sort_by(|x, y| x.0.cmp(&y.0));
            // Of equal keys keep the last (sort_by is stable).
            members.reverse();
            members.dedup_by(|later, kept| later.0 == kept.0);
            members.reverse();
            for (key, _) in &members {
                out.push(1);
                let start = out.len();
                out.extend_from_slice(key);
                end_text(out, start);
            }
            out.push(0);
            for (_, at) in &members {
                encode_at(b, *at, out);
            }
            j + 1
        }
        _ => {
            let end = skip_value(b, i);
            out.push(NUMBER);
            out.extend_from_slice(&double_form(number(&b[i..end]).unwrap_or(0.0)));
            end
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;
    use std::cmp::Ordering;

    /// jq's `jv_cmp` (src/jv_aux.c), written directly on `serde_json`
    /// values: the reference the forms are tested against.
    fn jq_cmp(a: &Value, b: &Value) -> Ordering {
        fn class(v: &Value) -> u8 {
            match v {
                Value::Null => 0,
                Value::Bool(false) => 1,
                Value::Bool(true) => 2,
                Value::Number(_) => 3,
                Value::String(_) => 4,
                Value::Array(_) => 5,
                Value::Object(_) => 6,
            }
        }
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                x.as_f64().unwrap().partial_cmp(&y.as_f64().unwrap()).unwrap()
            }
            (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Value::Array(x), Value::Array(y)) => {
                for (p, q) in x.iter().zip(y) {
                    let o = jq_cmp(p, q);
                    if o.is_ne() {
                        return o;
                    }
                }
                x.len().cmp(&y.len())
            }
            (Value::Object(x), Value::Object(y)) => {
                let mut kx: Vec<&String> = x.keys().collect();
                let mut ky: Vec<&String> = y.keys().collect();
                kx.sort_by(|p, q| p.as_bytes().cmp(q.as_bytes()));
                ky.sort_by(|p, q| p.as_bytes().cmp(q.as_bytes()));
                let o = kx.iter().map(|k| k.as_bytes()).cmp(ky.iter().map(|k| k.as_bytes()));
                if o.is_ne() {
                    return o;
                }
                for k in kx {
                    let o = jq_cmp(&x[k], &y[k]);
                    if o.is_ne() {
                        return o;
                    }
                }
                Ordering::Equal
            }
            _ => class(a).cmp(&class(b)),
        }
    }

    fn form(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        encode(Some(text.trim().as_bytes()), &mut out);
        out
    }

    /// JSON values with nested arrays and objects, strings of any code
    /// point, numbers negative, fractional, with exponents, -0.
    fn value() -> impl Strategy<Value = Value> {
        let number = prop_oneof![
            any::<i32>().prop_map(|x| serde_json::json!(x)),
            (-1000i32..1000, 0u32..4).prop_map(|(m, e)| serde_json::json!(m as f64 / 10f64.powi(e as i32))),
            any::<f64>().prop_filter("finite", |x| x.is_finite()).prop_map(|x| serde_json::json!(x)),
            Just(serde_json::json!(-0.0)),
            Just(serde_json::json!(0)),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            number,
            "[a-c\\x00é\"\\\\\u{1F600}\u{FFFF}]{0,4}".prop_map(Value::String),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[abé\u{1F600}]{0,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// JSON text of `v` with every non-ASCII character (and some ASCII
    /// ones) written as `\u` escapes, surrogate pairs included.
    fn escaped(v: &Value) -> String {
        let plain = v.to_string();
        let mut out = String::new();
        let mut in_string = false;
        let mut chars = plain.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                out.push(c);
                out.push(chars.next().unwrap());
                continue;
            }
            if c == '"' {
                in_string = !in_string;
            }
            if in_string && (c as u32 > 127 || c == 'a') {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn forms_order_as_jq(a in value(), b in value()) {
            let (fa, fb) = (form(&a.to_string()), form(&b.to_string()));
            prop_assert_eq!(fa.cmp(&fb), jq_cmp(&a, &b), "{} {}", a, b);
            // Escapes and whitespace change nothing.
            prop_assert_eq!(&form(&escaped(&a)), &fa, "{}", escaped(&a));
            let spaced = serde_json::to_string_pretty(&a).unwrap().replace('\n', " ");
            prop_assert_eq!(&form(&spaced), &fa);
            prop_assert!(check(escaped(&a).as_bytes()).is_ok());
        }

        #[test]
        fn lines_not_json_do_not_panic(line in prop::collection::vec(prop::sample::select(b"{}[]\",:\\ anu0-1.e".to_vec()), 0..24)) {
            let mut out = Vec::new();
            for path in [&[][..], &[Step::Key("a".into())], &[Step::Index(-1), Step::Key("".into())]] {
                let v = get(&line, path);
                encode(v, &mut out);
                encode_numeric(v, &mut out);
            }
            let _ = check(&line);
        }

        #[test]
        fn paths_find_what_serde_json_finds(v in value(), k in "[abé\u{1F600}]{0,2}", n in -3i64..3) {
            let text = escaped(&v);
            let want = match &v {
                Value::Object(m) => m.get(&k).cloned(),
                _ => None,
            };
            let got = get(text.as_bytes(), &[Step::Key(k.clone())]);
            prop_assert_eq!(got.map(|g| form(std::str::from_utf8(g).unwrap())), want.map(|w| form(&w.to_string())));
            let want = match &v {
                Value::Array(a) => {
                    let i = if n < 0 { a.len() as i64 + n } else { n };
                    usize::try_from(i).ok().and_then(|i| a.get(i)).cloned()
                }
                _ => None,
            };
            let got = get(text.as_bytes(), &[Step::Index(n)]);
            prop_assert_eq!(got.map(|g| form(std::str::from_utf8(g).unwrap())), want.map(|w| form(&w.to_string())));
        }
    }

    #[test]
    fn forms_of_examples() {
        let order = [
            "null",
            "false",
            "true",
            "-1e300",
            "-2",
            "-0.5",
            "0",
            "1e-3",
            "2",
            "10",
            "\"\"",
            "\"\\u0000\"",
            "\"A\"",
            "\"a\"",
            "\"a\\u0000\"",
            "\"ab\"",
            "\"é\"",
            "\"\\ud83d\\ude00\"",
            "[]",
            "[null]",
            "[1,2]",
            "[1,2,3]",
            "[2]",
            "{}",
            "{\"a\":2}",
            "{\"a\":1,\"b\":0}",
            "{\"b\":0}",
        ];
        for w in order.windows(2) {
            assert!(form(w[0]) < form(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(form("-0"), form("0.0"));
        assert_eq!(form("1E2"), form("100"));
        assert_eq!(form("{\"a\":1,\"a\":2}"), form("{\"a\":2}"), "the last value of a key");
        assert_eq!(form("\"\\ud800x\""), form("\"\u{FFFD}x\""), "a lone surrogate");
    }

    #[test]
    fn paths() {
        let line = br#" {"ts": 5, "user": {"id": 7, "na\"me": "x", "tags": [1, [2, 3], "z"]}, "ts": 6} "#;
        let at = |p: &[Step]| get(line, p).map(|v| std::str::from_utf8(v).unwrap());
        let k = |s: &str| Step::Key(s.into());
        assert_eq!(at(&[k("ts")]), Some("6"), "the last of a repeated key");
        assert_eq!(at(&[k("user"), k("na\"me")]), Some("\"x\""));
        assert_eq!(at(&[k("user"), k("tags"), Step::Index(1), Step::Index(-1)]), Some("3"));
        assert_eq!(at(&[k("user"), k("tags"), Step::Index(-1)]), Some("\"z\""));
        assert_eq!(at(&[k("user"), k("tags"), Step::Index(3)]), None);
        assert_eq!(at(&[k("ts"), k("x")]), None, "a member of a number");
        assert_eq!(at(&[Step::Index(0)]), None, "an element of an object");
        assert_eq!(at(&[]).map(|v| v.len()), Some(line.len() - 2));
    }

    #[test]
    fn numeric_forms() {
        let f = |t: &str| {
            let mut out = Vec::new();
            encode_numeric(Some(t.as_bytes()), &mut out);
            out
        };
        assert_eq!(f("12"), f("\" 12 \""));
        assert_eq!(f("-0"), f("0"));
        assert!(f("\"x\"") < f("-1e300"));
        assert_eq!(f("\"x\""), f("null"));
        assert_eq!(f("\"1.\""), f("[1]"), "not a JSON number");
        assert!(f("-2") < f("\"-1.5\""));
        assert!(f("9") < f("1e1"));
    }

    #[test]
    fn checks() {
        assert!(check(b"{\"a\":1}\r").is_ok());
        assert!(check(b" [1, \"\\u00e9\"] ").is_ok());
        assert_eq!(check(b"").unwrap_err(), "invalid JSON: a blank line");
        assert_eq!(check(b" \r").unwrap_err(), "invalid JSON: a blank line");
        let e = check(b"{\"a\":1} x").unwrap_err();
        assert!(e.starts_with("invalid JSON: trailing characters at column"), "{e}");
        assert!(check(b"{\"a\":01}").is_err());
        assert!(check(b"\"\xff\"").is_err());
        assert!(check(b"[1,]").is_err());
        assert_eq!(check(b"[\"\xff\"]").unwrap_err(), "invalid JSON: invalid UTF-8 at column 3");
        assert!(check(b"[\"\\ud800\"]").is_ok(), "a lone surrogate, as jq and Python read it");
    }
}
