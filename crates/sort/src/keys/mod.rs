//! GNU `sort`'s orderings of text lines — keys (`-k`), a field separator
//! (`-t`), numeric, general-numeric, human, month, version and random
//! orders, folding, dictionary order, reversal, `-s` and `-u` — compiled
//! into **normalised keys**: byte strings whose bytewise order is the
//! line order, as DuckDB's sort normalises its keys.
//!
//! A [`LineOrder`] is built from the options ([`LineOrder::new`]: GNU's
//! rules for which global flags a key inherits, and which modifiers cannot
//! be combined). It compares two lines exactly as GNU `sort` 9.1 does
//! ([`LineOrder::compare`]: the keys in turn, then — unless `-s` or `-u` —
//! the whole lines, reversed by a global `-r`) under `LC_ALL=C` or in the
//! [`Locale`] it carries (module `locale`), and it writes a
//! line's normalised key ([`LineOrder::encode`]): run formation sorts by
//! it and the merge compares with it. A key of at most 8 bytes is parsed
//! once: the run carries it beside its line to the merge.
//!
//! # The normalised key
//!
//! Each key's bytes (module `field`: `begfield`/`limfield`) are transformed
//! (`-d`, `-i` drop bytes, `-f` folds to upper case), then written in a
//! form that no other form of that key is a prefix of, so that the keys can
//! simply be concatenated:
//!
//! | order | form | examples |
//! |---|---|---|
//! | text | the bytes, NUL as `00 FF`, then `00 00` | `ab` → `61 62 00 00` |
//! | `-n` | class (`01` −, `02` zero, `03` +), decimal exponent E of 0.d₁d₂…×10^E (`80+E`), digits as nibbles d+1 ended by a 0 nibble; all but the class inverted when negative | `12.5` → `03 82 23 60`; `-0`, `abc`, `+5` → `02` |
//! | `-h` | `08` + the unit's order (K 1 … Y 8, negated for negative numbers), then the `-n` form | `2K` → `09 03 81 30` |
//! | `-M` | one byte: 0 unknown, 1 January … 12 December | ` feb` → `02` |
//! | `-g` | `strtold`'s value: `00` not a number, `01` NaN + its long double's bytes (padding zeroed; GNU 9.1 memcmps them), `02` then sign class and binary exponent + mantissa | `1e3` → `02 02 …` |
//! | `-V`, `-R` | none: the comparator decides | |
//! | `--jsonl` `.path` | the value's form in jq's order (module `crate::json`): class `01` null … `07` object, then the order-preserving double, the string's unescaped bytes ended by `00 00`, elements/members ended by `00` | `"ab"` → `05 61 62 00 00`; `[1]` → `06 04 BF F0 … 00` |
//! | `--jsonl` `.path:n` | `02` + the double for a number or a string holding one; `01` otherwise | `"12"` → `02 C0 28 …` |
//!
//! JSON lines (`--jsonl`, [`JsonKey`]: `-k .user.id`, `-k .ts:nr`) take
//! each key's value by its path (a missing one is null) and write its
//! form; a global `-r` reverses every such key and the last resort.
//!
//! In a [`Locale`] the numbers take its decimal point and thousands
//! separator, `-M` its month names, `-f`/`-d`/`-i` its tables; a text key
//! of a locale that collates (not C.UTF-8, whose `strcoll` is `strcmp`) is
//! the primary weights of `strxfrm`'s output for the key's first
//! NUL-separated piece, then `00 00`: glibc's `strxfrm` and `strcoll`
//! disagree beyond the primary level, so that form ends the normalised key
//! like a `-V` key, and equal forms are put in order by `strcoll`
//! ([`LineOrder::compare`]); lines without keys have the whole line's
//! form, and the last resort is `strcoll` too. `LineOrder` holds the locale
//! as an `Option`: `None` is the C path, unchanged.
//!
//! A reversed key (`-k2,2r`, or a key inheriting a global `-r`) has every
//! byte of its form inverted. `-V` and `-R` keys end the normalised key:
//! lines equal on what precedes them are put in order by
//! [`LineOrder::compare`], which is the ground truth the forms are tested
//! against.
//!
//! ```
//! use emsort_sort::keys::{Key, LineOrder, OrderOptions};
//! let mut o = OrderOptions::default();
//! o.tab = Some(b',');
//! o.keys.push(Key::parse("3,3n").unwrap());
//! let order = LineOrder::new(o).unwrap();
//! let (mut a, mut b, mut s) = (Vec::new(), Vec::new(), Default::default());
//! order.encode(b"7,x,9.5", &mut a, &mut s);
//! order.encode(b"1,y,10", &mut b, &mut s);
//! assert!(a < b);
//! assert!(order.compare(b"7,x,9.5", b"1,y,10").is_lt());
//! ```

mod debug;
mod encode;
mod field;
mod general;
mod json_key;
mod key;
mod locale;
mod primary;
mod spec;
mod version;

use std::cmp::Ordering;

use md5::{Digest, Md5};

pub use crate::csv::FieldCount;
pub use crate::json::Step;
use encode::{encode_key, transform};
pub use json_key::JsonKey;
pub use key::{Ignore, Key, KeyKind};
pub use locale::{Locale, LocaleError};

/// The ordering options as given (`-k` keys in order, the global flags
/// gathered in one [`Key`], `-t`, `-s`, `-u`, the `-R` salt).
#[derive(Debug, Clone, Default)]
pub struct OrderOptions {
    /// The `-k` keys, in order.
    pub keys: Vec<Key>,
    /// The global flags (`-n`, `-r`, `-b` …) as a whole-line key.
    pub global: Key,
    /// `-t`: the field separator; `None`: blank-separated fields.
    pub tab: Option<u8>,
    /// `--csv`: lines are CSV records and keys take their fields as a CSV
    /// parser sees them (module `csv`), separated by `tab` (`,` if unset).
    pub csv: bool,
    /// `--fields`: how many fields every CSV record must have (checked as
    /// the input is read; a record with another count is bad input).
    pub fields: Option<FieldCount>,
    /// `--jsonl`: lines are JSON values, ordered by `json_keys` (module
    /// `crate::json`); `keys` must be empty.
    pub jsonl: bool,
    /// The `--jsonl` keys (`-k .path[:nr]`), in order; none: the whole
    /// value.
    pub json_keys: Vec<JsonKey>,
    /// Lines are framed rows (module `crate::rows`) ordered by the key
    /// bytes each carries (reversed by a global `-r`), equal keys in
    /// input order; no other key applies.
    pub rows: bool,
    /// `-s`: no last-resort comparison.
    pub stable: bool,
    /// `-u`: one line per group of equal keys.
    pub unique: bool,
    /// The 16 bytes that salt `-R`'s hashes (GNU reads them from
    /// `--random-source`, else from getrandom).
    pub salt: [u8; 16],
    /// The locale to compare in ([`Locale::from_env`]); `None`: C.
    pub locale: Option<Locale>,
}

/// A compiled line order (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineOrder {
    keys: Vec<Key>,
    tab: Option<u8>,
    csv: bool,
    fields_check: Option<FieldCount>,
    /// `--jsonl`'s keys (each reversed by a global `-r` as well).
    json: Option<Vec<JsonKey>>,
    /// Framed rows, ordered by their own key bytes.
    rows: bool,
    reverse: bool,
    stable: bool,
    unique: bool,
    salt: [u8; 16],
    /// The locale; `None`: C, whose path is the one without it.
    locale: Option<Locale>,
    /// Every key has a normalised form: equal forms mean equal keys.
    complete: bool,
    /// The bytes of each line are the key (no -k and no modifier, in C).
    plain: bool,
    /// Fields of a line to split to place every key.
    fields: usize,
    /// Whether a key may reach past the last of those fields' separators
    /// (one running to the line's end, or a character position): else a
    /// CSV record is unquoted only up to it.
    rest: bool,
    /// The first `-V`/`-R` key (`keys.len()` when none): where the
    /// normalised key ends.
    open_from: usize,
}

/// Reusable room for [`LineOrder::encode`] and the comparisons, so that no
/// line costs an allocation: one per thread (or per merge window).
#[derive(Debug, Default)]
pub struct Scratch {
    ends_a: Vec<usize>,
    ends_b: Vec<usize>,
    text_a: Vec<u8>,
    text_b: Vec<u8>,
    form_a: Vec<u8>,
    form_b: Vec<u8>,
    /// CSV records' fields, unquoted.
    fields_a: Vec<u8>,
    fields_b: Vec<u8>,
    csv: crate::csv::Unquote,
}

thread_local! {
    /// For the comparisons, which callers make from anywhere.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

impl LineOrder {
    /// Compiles the options with GNU's rules; `Err` carries GNU's message
    /// (e.g. `options '-gn' are incompatible`).
    pub fn new(o: OrderOptions) -> Result<LineOrder, String> {
        if o.rows {
            return LineOrder::framed_rows(o);
        }
        if o.jsonl || !o.json_keys.is_empty() {
            return LineOrder::json(o);
        }
        let mut keys = o.keys;
        for k in &mut keys {
            k.inherit(&o.global);
        }
        if keys.is_empty() && !o.global.is_default() {
            keys.push(o.global.clone());
        }
        for k in &keys {
            k.check_compatible()?;
        }
        // Where the normalised key ends: at the first -V or -R key, or, in
        // a locale that collates, at the first text key, whose form (its
        // primary weights) leaves ties to strcoll (module `locale`).
        let collates = o.locale.as_ref().is_some_and(Locale::collates);
        let open_from = keys
            .iter()
            .position(|k| match k.kind() {
                KeyKind::Version | KeyKind::Random => true,
                KeyKind::Text => collates,
                _ => false,
            })
            .unwrap_or(keys.len());
        let complete = open_from == keys.len() && !(collates && keys.is_empty());
        // In a locale, lines without keys compare by the collation: their
        // normalised key is the whole line's form.
        let plain = keys.is_empty() && !o.locale.as_ref().is_some_and(Locale::collates);
        let fields = keys.iter().map(field::fields_needed).max().unwrap_or(0);
        let rest = keys.iter().any(|k| k.eword.is_none() || k.echar != 0);
        Ok(LineOrder {
            keys,
            tab: if o.csv { o.tab.or(Some(b',')) } else { o.tab },
            csv: o.csv,
            fields_check: o.fields.filter(|_| o.csv),
            json: None,
            rows: false,
            reverse: o.global.reverse,
            stable: o.stable,
            unique: o.unique,
            salt: o.salt,
            locale: o.locale,
            complete,
            plain,
            fields,
            rest,
            open_from,
        })
    }

    /// The order of JSON lines (`--jsonl`): its keys, or the whole value;
    /// a global `-r` reverses every key and the last resort.
    fn json(o: OrderOptions) -> Result<LineOrder, String> {
        if !o.jsonl {
            return Err("a JSON path key (-k .name) orders JSON lines: add --jsonl".to_string());
        }
        if !o.keys.is_empty() {
            return Err(
                "--jsonl keys are JSON paths (-k .user.id, -k .ts:n): not GNU field keys (-k2,2)".to_string()
            );
        }
        let mut global = o.global.clone();
        global.reverse = false;
        if !global.is_default() {
            return Err("--jsonl orders by jq's order: of the ordering options only -r applies (-k .ts:n \
                        for numbers)"
                .to_string());
        }
        if o.tab.is_some() || o.csv {
            return Err("--jsonl lines have no fields: not with -t, --csv or --tsv".to_string());
        }
        // jq orders strings by code point, whatever the locale.
        let keyless = LineOrder::keyless(&o);
        let mut keys = o.json_keys;
        if keys.is_empty() {
            keys.push(JsonKey::default());
        }
        for k in &mut keys {
            k.reverse ^= o.global.reverse;
        }
        Ok(LineOrder { json: Some(keys), ..keyless })
    }

    /// The order of framed rows: their key bytes, reversed by a global
    /// `-r`; equal keys keep their input order.
    fn framed_rows(o: OrderOptions) -> Result<LineOrder, String> {
        let mut global = o.global.clone();
        global.reverse = false;
        if !o.keys.is_empty()
            || !global.is_default()
            || o.jsonl
            || !o.json_keys.is_empty()
            || o.tab.is_some()
            || o.csv
        {
            return Err(
                "framed rows are ordered by the key each carries: no other key or field applies".to_string()
            );
        }
        Ok(LineOrder { rows: true, stable: true, ..LineOrder::keyless(&o) })
    }

    /// An order with no GNU key, field or locale, whose normalised key is
    /// complete: what `--jsonl` and framed rows start from (each then sets
    /// its own keys).
    fn keyless(o: &OrderOptions) -> LineOrder {
        LineOrder {
            keys: Vec::new(),
            tab: None,
            csv: false,
            fields_check: None,
            json: None,
            rows: false,
            reverse: o.global.reverse,
            stable: o.stable,
            unique: o.unique,
            salt: o.salt,
            locale: None,
            complete: true,
            plain: false,
            fields: 0,
            rest: true,
            open_from: 0,
        }
    }

    /// Whether lines are framed rows (module `crate::rows`).
    pub fn rows(&self) -> bool {
        self.rows
    }

    /// Whether lines are JSON values (`--jsonl`).
    pub fn jsonl(&self) -> bool {
        self.json.is_some()
    }

    /// The `--jsonl` keys (after a global `-r`), if lines are JSON.
    pub fn json_keys(&self) -> Option<&[JsonKey]> {
        self.json.as_deref()
    }

    /// Whether this is plain `LC_ALL=C sort` (no keys, and no locale that
    /// collates): lines compare bytewise, reversed by `-r`.
    pub fn is_plain(&self) -> bool {
        self.plain
    }

    /// The locale compared in (`None`: C).
    pub fn locale(&self) -> Option<&Locale> {
        self.locale.as_ref()
    }

    /// Whether text compares in a collating locale (GNU's
    /// `hard_LC_COLLATE`): by `strcoll`, with normalised keys that are
    /// `strxfrm`'s partial forms.
    pub fn collates(&self) -> bool {
        self.collation().is_some()
    }

    /// The locale when it collates (GNU's `hard_LC_COLLATE`).
    #[inline]
    fn collation(&self) -> Option<&Locale> {
        self.locale.as_ref().filter(|l| l.collates())
    }

    /// Whether the last resort compares whole lines bytewise (C, or a
    /// locale whose `LC_COLLATE` is C): their first 8 bytes then order
    /// them as far as they go.
    pub fn bytewise_last_resort(&self) -> bool {
        self.collation().is_none()
    }

    /// Whether lines with equal whole keys are ordered by the bytewise
    /// last resort alone: no `-V`/`-R` key, no `-s`/`-u`, no collating
    /// locale.
    pub fn ties_bytewise(&self) -> bool {
        self.complete() && !self.keeps_input_order() && self.bytewise_last_resort()
    }

    /// The keys after inheritance.
    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// `-u`.
    pub fn unique(&self) -> bool {
        self.unique
    }

    /// Whether lines the order finds equal may differ, so that they must
    /// keep their input order (GNU's merge is stable): `-s` or `-u` (equal
    /// keys), or a collating locale, where `strcoll` finds lines of
    /// different bytes equal.
    pub fn keeps_input_order(&self) -> bool {
        self.stable || self.unique || self.collation().is_some()
    }

    /// The separator of CSV records' fields (`--csv`), if lines are such
    /// records.
    pub fn csv(&self) -> Option<u8> {
        self.tab.filter(|_| self.csv)
    }

    /// The field count every CSV record must have (`--fields`), if any.
    pub fn field_count(&self) -> Option<FieldCount> {
        self.fields_check
    }

    /// The fields of `record` (without its terminator) as keys see them:
    /// a CSV record's values, unquoted, or the line split by `-t`, or by
    /// blanks (leading blanks dropped): the column names of a header.
    pub fn columns(&self, record: &[u8]) -> Vec<Vec<u8>> {
        SCRATCH.with(|s| {
            let s = &mut *s.borrow_mut();
            let all = LineOrder { fields: usize::MAX, rest: true, ..self.clone() };
            let text = all.split(record, &mut s.ends_a, &mut s.fields_a, &mut s.csv);
            // `-t` gives the separators' places, blanks each field's end.
            let last = self.tab.map(|_| text.len());
            let (mut from, mut cols) = (0, Vec::with_capacity(s.ends_a.len() + 1));
            for &to in s.ends_a.iter().chain(last.as_ref()) {
                let col = &text[from..to];
                cols.push(match self.tab {
                    Some(_) => col.to_vec(),
                    None => col.iter().skip_while(|&&b| field::is_blank(b)).copied().collect(),
                });
                from = (to + usize::from(self.tab.is_some())).min(text.len());
            }
            cols
        })
    }

    /// Global `-r`.
    pub fn reverse(&self) -> bool {
        self.reverse
    }

    /// Whether equal normalised keys mean equal keys (no `-V`, `-R`).
    pub fn complete(&self) -> bool {
        self.complete
    }

    /// Appends `line`'s normalised key to `out` (`s`: reusable room).
    /// Returns whether the whole key was written: false when a `-V`/`-R`
    /// key ends it (then the comparator decides between equal forms).
    pub fn encode(&self, line: &[u8], out: &mut Vec<u8>, s: &mut Scratch) -> bool {
        if self.rows {
            let key = crate::rows::key(line);
            if self.reverse {
                out.extend(key.iter().map(|b| !b));
            } else {
                out.extend_from_slice(key);
            }
            return true;
        }
        if let Some(keys) = &self.json {
            json_encode(keys, line, out);
            return true;
        }
        if self.keys.is_empty() {
            // The whole line is the key (plain `sort -u`; any sort without
            // keys in a locale).
            encode_key(KeyKind::Text, self.reverse, line, out, self.collation());
            return true;
        }
        let loc = self.locale.as_ref();
        let line = self.split(line, &mut s.ends_a, &mut s.fields_a, &mut s.csv);
        for k in &self.keys[..self.open_from] {
            let (from, to) = field::key_range(line, k, self.tab, &s.ends_a);
            let text = transform(k, &line[from..to], &mut s.text_a, loc);
            encode_key(k.kind(), k.reverse, text, out, loc);
        }
        // A collated text key ends the normalised key with its partial form.
        if let Some(k) = self.keys.get(self.open_from).filter(|k| k.kind() == KeyKind::Text) {
            if self.collation().is_some() {
                let (from, to) = field::key_range(line, k, self.tab, &s.ends_a);
                let text = transform(k, &line[from..to], &mut s.text_a, loc);
                encode_key(KeyKind::Text, k.reverse, text, out, loc);
            }
        }
        self.complete
    }

    /// The text `line`'s keys are taken from, with the ends of its first
    /// fields in `ends`: the line itself, or a CSV record's fields' values
    /// joined by the separator (in `text`) when some field is quoted.
    #[inline]
    fn split<'a>(
        &self,
        line: &'a [u8],
        ends: &mut Vec<usize>,
        text: &'a mut Vec<u8>,
        room: &mut crate::csv::Unquote,
    ) -> &'a [u8] {
        let line = match self.csv() {
            Some(sep) => {
                let record = line.strip_suffix(b"\r").unwrap_or(line);
                if crate::csv::has_quote(record) {
                    return crate::csv::fields(record, sep, self.fields, self.rest, ends, text, room);
                }
                record
            }
            None => line,
        };
        field::split_fields(line, self.tab, self.fields, ends);
        line
    }

    /// Whether lines are ordered by keys (GNU's `-k`, or `--jsonl`'s),
    /// not as whole lines.
    #[inline]
    fn has_keys(&self) -> bool {
        !self.keys.is_empty() || self.json.is_some() || self.rows
    }

    /// Compares two lines (without their terminators) by the keys alone
    /// (GNU's `keycompare`).
    pub fn compare_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.compare_keys_from(0, a, b)
    }

    /// [`LineOrder::compare_keys`] from key `first` on.
    fn compare_keys_from(&self, first: usize, a: &[u8], b: &[u8]) -> Ordering {
        let loc = self.locale.as_ref();
        if self.rows {
            let o = crate::rows::key(a).cmp(crate::rows::key(b));
            return if self.reverse { o.reverse() } else { o };
        }
        SCRATCH.with(|s| {
            let s = &mut *s.borrow_mut();
            if let Some(keys) = &self.json {
                s.form_a.clear();
                s.form_b.clear();
                json_encode(&keys[first..], a, &mut s.form_a);
                json_encode(&keys[first..], b, &mut s.form_b);
                return s.form_a.cmp(&s.form_b);
            }
            let a = self.split(a, &mut s.ends_a, &mut s.fields_a, &mut s.csv);
            let b = self.split(b, &mut s.ends_b, &mut s.fields_b, &mut s.csv);
            for k in &self.keys[first..] {
                let (fa, ta) = field::key_range(a, k, self.tab, &s.ends_a);
                let (fb, tb) = field::key_range(b, k, self.tab, &s.ends_b);
                let ta = transform(k, &a[fa..ta], &mut s.text_a, loc);
                let tb = transform(k, &b[fb..tb], &mut s.text_b, loc);
                let o = match k.kind() {
                    KeyKind::Text => match self.collation() {
                        None => ta.cmp(tb),
                        Some(l) => l.collate(ta, tb),
                    },
                    KeyKind::Version => version::compare(ta, tb),
                    KeyKind::Random => match self.locale.as_ref().filter(|l| l.hard_collate()) {
                        None => self.random(ta).cmp(&self.random(tb)).then_with(|| ta.cmp(tb)),
                        Some(l) => {
                            // GNU hashes (and breaks ties by) strxfrm's text.
                            s.form_a.clear();
                            s.form_b.clear();
                            l.random_text(ta, &mut s.form_a);
                            l.random_text(tb, &mut s.form_b);
                            self.random(&s.form_a)
                                .cmp(&self.random(&s.form_b))
                                .then_with(|| s.form_a.cmp(&s.form_b))
                        }
                    },
                    kind => {
                        s.form_a.clear();
                        s.form_b.clear();
                        encode_key(kind, false, ta, &mut s.form_a, loc);
                        encode_key(kind, false, tb, &mut s.form_b, loc);
                        s.form_a.cmp(&s.form_b)
                    }
                };
                let o = if k.reverse { o.reverse() } else { o };
                if o.is_ne() {
                    return o;
                }
            }
            Ordering::Equal
        })
    }

    /// Compares two lines whose normalised keys ([`LineOrder::encode`])
    /// are equal: by the keys that have no normalised form (`-V`, `-R`),
    /// then by the last resort unless `-s` or `-u`.
    #[inline]
    pub fn compare_equal_forms(&self, a: &[u8], b: &[u8]) -> Ordering {
        if !self.has_keys() {
            // Without keys GNU compares the whole lines, even under -s/-u
            // (here in a locale: their forms were partial).
            return self.last_resort(a, b);
        }
        if !self.complete {
            let o = self.compare_keys_from(self.open_from, a, b);
            if o.is_ne() {
                return o;
            }
        }
        if self.stable || self.unique {
            Ordering::Equal
        } else {
            self.last_resort(a, b)
        }
    }

    /// Compares two lines (without their terminators) as GNU `sort`
    /// orders them: by the keys, then, unless `-s` or `-u`, by the whole
    /// lines (reversed by a global `-r`).
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.has_keys() {
            let o = self.compare_keys(a, b);
            if o.is_ne() || self.stable || self.unique {
                return o;
            }
        }
        self.last_resort(a, b)
    }

    /// The last-resort comparison: the whole lines bytewise (in a
    /// collating locale by `xmemcoll0`), reversed by a global `-r`.
    #[inline]
    pub fn last_resort(&self, a: &[u8], b: &[u8]) -> Ordering {
        let o = match self.collation() {
            Some(l) => l.collate(a, b),
            // Most lines differ in their first 8 bytes: told apart there
            // without a call to memcmp.
            None => match (a.first_chunk::<8>(), b.first_chunk::<8>()) {
                (Some(x), Some(y)) if x != y => u64::from_be_bytes(*x).cmp(&u64::from_be_bytes(*y)),
                _ => a.cmp(b),
            },
        };
        if self.reverse {
            o.reverse()
        } else {
            o
        }
    }

    /// Whether `-u` keeps only one of `a` and `b` (GNU: `compare` is 0).
    pub fn same(&self, a: &[u8], b: &[u8]) -> bool {
        self.compare(a, b).is_eq()
    }

    /// `-R`'s hash of a key: MD5 of the salt and the key.
    fn random(&self, text: &[u8]) -> [u8; 16] {
        let mut h = Md5::new();
        h.update(self.salt);
        h.update(text);
        h.finalize().into()
    }
}

/// Appends the normalised keys of JSON line `line` by `keys` to `out`:
/// each value's form in jq's order (module `crate::json`), inverted when
/// the key is reversed.
fn json_encode(keys: &[JsonKey], line: &[u8], out: &mut Vec<u8>) {
    for k in keys {
        let start = out.len();
        let value = crate::json::get(line, &k.path);
        if k.numeric {
            crate::json::encode_numeric(value, out);
        } else {
            crate::json::encode(value, out);
        }
        if k.reverse {
            out[start..].iter_mut().for_each(|b| *b = !*b);
        }
    }
}

#[cfg(test)]
mod tests;
