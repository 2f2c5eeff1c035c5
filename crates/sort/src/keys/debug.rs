//! `sort --debug`: GNU sort 9.1's warnings about the options
//! (`key_warnings`) and its annotation of each output line (`debug_line`,
//! `debug_key`, `mark_key`), under `LC_ALL=C`.
//!
//! The annotation of a line is the line (tabs shown as `>`), then for each
//! key a line of spaces up to where the key starts and underscores under
//! the bytes it used — `^ no match for key` when it used none — and, unless
//! `-s` or `-u`, one more underlining the whole line for the last-resort
//! comparison (a sort without keys underlines only the whole line):
//!
//! ```text
//! $ printf 'b\t10 x\n' | sort --debug -k2n
//! b>10 x
//!   __
//! ______
//! ```
//!
//! A key's extent is the field positions of its `-k` (module `field`), and
//! for `-n`, `-h`, `-g` and `-M` keys only the part GNU's scanners read:
//! leading blanks skipped, then the number (with `-h` its unit) or the
//! month name. Widths count each byte GNU's `mbsnwidth` counts in the C
//! locale — printable ASCII and bytes ≥ 0x80 one column, other control
//! bytes none — and a tab one.

use std::ops::Range;

use super::encode::{raw_number, Num};
use super::field::{is_blank, key_end, key_start};
use super::{general, Key, LineOrder, Locale, OrderOptions};

impl LineOrder {
    /// The byte ranges `--debug` underlines in `line` (without its
    /// terminator): one per key, then the whole line unless `-s` or `-u`
    /// (only the whole line when there is no key). An empty range is a key
    /// that matched nothing; its start is where GNU puts the `^`.
    pub fn debug_spans(&self, line: &[u8]) -> Vec<Range<usize>> {
        let loc = self.locale.as_ref();
        let mut spans: Vec<Range<usize>> =
            self.keys.iter().map(|k| key_span(line, k, self.tab, loc)).collect();
        if self.keys.is_empty() || !(self.stable || self.unique) {
            spans.push(0..line.len());
        }
        spans
    }

    /// Appends GNU `sort --debug`'s output for the output line `line`
    /// (without its terminator) to `out`: the line with tabs as `>` and a
    /// newline, then one marker line per span of [`LineOrder::debug_spans`].
    pub fn annotate(&self, line: &[u8], out: &mut Vec<u8>) {
        out.extend(line.iter().map(|&b| if b == b'\t' { b'>' } else { b }));
        out.push(b'\n');
        let width = |t: &[u8]| match &self.locale {
            Some(l) => l.width(t),
            None => width(t),
        };
        for span in self.debug_spans(line) {
            let offset = width(&line[..span.start]);
            out.resize(out.len() + offset, b' ');
            match width(&line[span]) {
                0 => out.extend_from_slice(b"^ no match for key\n"),
                w => {
                    out.resize(out.len() + w, b'_');
                    out.push(b'\n');
                }
            }
        }
    }
}

/// Columns GNU's `debug_width` gives `t` in the C locale: `mbsnwidth`
/// (printable ASCII and bytes ≥ 0x80 one each, control bytes none) plus one
/// per tab.
fn width(t: &[u8]) -> usize {
    t.iter().filter(|&&b| matches!(b, b'\t' | 0x20..=0x7e | 0x80..=0xff)).count()
}

/// GNU's `debug_key`: where `key` starts in `line` and where the part of
/// it that compares ends (an empty range when nothing).
fn key_span(line: &[u8], key: &Key, tab: Option<u8>, loc: Option<&Locale>) -> Range<usize> {
    // Without a start field GNU starts at the line's start here (not after
    // the blanks a `b` skips: those are skipped below, up to the key's end).
    let mut beg = if key.sword.is_some() { key_start(line, key, tab) } else { 0 };
    let lim = key_end(line, key, tab);
    let numeric = key.numeric || key.general_numeric || key.human_numeric;
    if !((key.skip_start_blanks && key.sword.is_none()) || key.month || numeric) {
        return beg..lim.max(beg);
    }
    // GNU ends the line at the key's end for this skip; an end before the
    // start leaves the skip to the line's end.
    let stop = if lim >= beg { lim } else { line.len() };
    while beg < stop && is_blank(line[beg]) {
        beg += 1;
    }
    if lim < beg {
        return beg..beg;
    }
    let t = &line[beg..lim];
    let used = if key.month {
        match loc {
            Some(l) => l.month(t).1,
            None if is_month(t) => 3,
            None => 0,
        }
    } else if key.general_numeric {
        general::number_len(t, loc)
    } else if numeric {
        let sign = usize::from(t.first() == Some(&b'-'));
        match raw_number(&t[sign..], Num::of(loc)) {
            (max, end) if max >= b'0' => {
                let end = sign + end;
                end + usize::from(key.human_numeric && t.get(end).is_some_and(|&u| is_unit(u)))
            }
            _ => 0,
        }
    } else {
        t.len()
    };
    beg..beg + used
}

/// GNU 9.1's `unit_order` letters for `-h`.
fn is_unit(b: u8) -> bool {
    matches!(b, b'K' | b'k' | b'M' | b'G' | b'T' | b'P' | b'E' | b'Z' | b'Y')
}

/// GNU's `getmonth` in the C locale: the first three bytes name a month,
/// in any case.
fn is_month(t: &[u8]) -> bool {
    const NAMES: [&[u8; 3]; 12] =
        [b"JAN", b"FEB", b"MAR", b"APR", b"MAY", b"JUN", b"JUL", b"AUG", b"SEP", b"OCT", b"NOV", b"DEC"];
    t.len() >= 3 && NAMES.iter().any(|n| t[..3].eq_ignore_ascii_case(&n[..]))
}

impl OrderOptions {
    /// The warnings GNU `sort --debug` prints before sorting (its
    /// `key_warnings`, after the locale line), without the `sort: ` prefix,
    /// in its order: keys of zero width, leading blanks that count, numeric
    /// keys spanning fields, how numbers are read, global options no key
    /// uses, and a `-r` that only reverses the last resort.
    pub fn debug_warnings(&self) -> Vec<String> {
        let loc = self.locale.as_ref();
        // GNU's quote(): curly quotes where LC_CTYPE's charset is UTF-8.
        let q = |t: &str| match loc {
            Some(l) if l.utf8() => format!("\u{2018}{t}\u{2019}"),
            _ => format!("'{t}'"),
        };
        let mut w = vec![match loc.filter(|l| l.hard_collate()) {
            Some(l) => format!("text ordering performed using {} sorting rules", q(l.collate_name())),
            None => "text ordering performed using simple byte comparison".to_string(),
        }];
        let mut keys = self.keys.clone();
        for k in &mut keys {
            k.inherit(&self.global);
        }
        let global_only = keys.is_empty() && !self.global.is_default();
        if global_only {
            keys.push(self.global.clone());
        }
        // The global options no key took (GNU's `ugkey`).
        let mut unused = self.global.clone();
        let (mut basic, mut general, mut basic_span, mut general_span) = (false, false, false, false);
        for (i, k) in keys.iter().enumerate() {
            let n = i + 1;
            let numeric = k.numeric || k.general_numeric || k.human_numeric;
            if numeric {
                if k.general_numeric {
                    general = true;
                } else {
                    basic = true;
                }
            }
            if k.traditional {
                // GNU's `+SWORD -EWORD+1` and `-k SWORD+1,EWORD+1`.
                let s = k.sword.unwrap_or(0);
                let (mut old, mut new) = (format!("+{s}"), format!("-k {}", s + 1));
                if let Some(e) = k.eword {
                    old += &format!(" -{}", e + 1);
                    new += &format!(",{}", e + 1);
                }
                w.push(format!("obsolescent key {} used; consider {} instead", q(&old), q(&new)));
            }
            let zero_width = matches!((k.sword, k.eword), (Some(s), Some(e)) if e < s);
            if zero_width {
                w.push(format!("key {n} has zero width and will be ignored"));
            }
            let implicit_skip = numeric || k.month;
            let line_offset = k.eword == Some(0) && k.echar != 0;
            if !zero_width
                && !global_only
                && self.tab.is_none()
                && !line_offset
                && ((!k.skip_start_blanks && (!implicit_skip || k.schar != 0))
                    || (!k.skip_end_blanks && k.echar != 0))
            {
                w.push(format!("leading blanks are significant in key {n}; consider also specifying 'b'"));
            }
            if !global_only && numeric {
                // GNU's field numbers + 1, where "none" (SIZE_MAX) wraps to 0.
                let sword = k.sword.map_or(1, |s| s.saturating_add(1));
                let eword = k.eword.map_or(0, |e| e.saturating_add(1));
                if eword == 0 || sword < eword {
                    w.push(format!("key {n} is numeric and spans multiple fields"));
                    if k.general_numeric {
                        general_span = true;
                    } else {
                        basic_span = true;
                    }
                }
            }
            if unused.ignore.is_some() && unused.ignore == k.ignore {
                unused.ignore = None;
            }
            unused.fold &= !k.fold;
            unused.skip_start_blanks &= !k.skip_start_blanks;
            unused.skip_end_blanks &= !k.skip_end_blanks;
            unused.month &= !k.month;
            unused.numeric &= !k.numeric;
            unused.general_numeric &= !k.general_numeric;
            unused.human_numeric &= !k.human_numeric;
            unused.random &= !k.random;
            unused.version &= !k.version;
            unused.reverse &= !k.reverse;
        }
        // The locale's decimal point and thousands separator (C: '.' and
        // none, so no field separator is one).
        let num = Num::of(loc);
        let blank = |b: u8| b == b' ' || b == b'\t';
        let ch = |b: u8| String::from_utf8_lossy(&[b]).into_owned();
        let has_sep = num.thousands != super::locale::NON_CHAR;
        let mut number_warned = false;
        if basic_span {
            let sep_is_tab = match self.tab {
                None => has_sep && blank(num.thousands),
                Some(t) => has_sep && t == num.thousands,
            };
            if sep_is_tab {
                w.push(format!(
                    "field separator {} is treated as a group separator in numbers",
                    q(&ch(num.thousands))
                ));
                number_warned = true;
            }
        }
        if basic_span || general_span {
            let point_is_tab = match self.tab {
                None => has_sep && blank(num.decimal),
                Some(t) => t == num.decimal,
            };
            if point_is_tab {
                w.push(format!(
                    "field separator {} is treated as a decimal point in numbers",
                    q(&ch(num.decimal))
                ));
                number_warned = true;
            } else if self.tab == Some(b'-') {
                w.push(format!("field separator {} is treated as a minus sign in numbers", q("-")));
            } else if general_span && self.tab == Some(b'+') {
                w.push(format!("field separator {} is treated as a plus sign in numbers", q("+")));
            }
        }
        if (basic || general) && !number_warned {
            let note = if self.tab == Some(num.decimal) { "" } else { "note " };
            w.push(format!("{note}numbers use {} as a decimal point in this locale", q(&ch(num.decimal))));
        }
        if basic && loc.is_some_and(Locale::thousands_sep_ignored) {
            w.push("the multi-byte number group separator in this locale is not supported".into());
        }
        let keeps_order = self.stable || self.unique;
        let has_keys = !keys.is_empty();
        if !unused.is_default() || (unused.reverse && keeps_order && has_keys) {
            let mut shown = unused.clone();
            if !keeps_order {
                shown.reverse = false;
            }
            let letters = shown.letters();
            w.push(if letters.len() == 1 {
                format!("option '-{letters}' is ignored")
            } else {
                format!("options '-{letters}' are ignored")
            });
        }
        if unused.reverse && !keeps_order && has_keys {
            w.push("option '-r' only applies to last-resort comparison".into());
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(keys: &[&str], global: &str, tab: Option<u8>, stable: bool) -> OrderOptions {
        let mut o = OrderOptions {
            keys: keys.iter().map(|k| Key::parse(k).unwrap()).collect(),
            tab,
            stable,
            ..OrderOptions::default()
        };
        for c in global.chars() {
            o.global.set_global(c);
        }
        o
    }

    fn annotated(o: OrderOptions, line: &[u8]) -> String {
        let mut out = Vec::new();
        LineOrder::new(o).unwrap().annotate(line, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    // The expected texts are GNU sort 9.1's, under LC_ALL=C.
    #[test]
    fn annotations_as_gnu_prints_them() {
        assert_eq!(annotated(order(&[], "", None, false), b"b\t2"), "b>2\n___\n");
        assert_eq!(annotated(order(&[], "", None, false), b""), "\n^ no match for key\n");
        assert_eq!(annotated(order(&[], "", None, false), b"\x01\x80z"), "\x01\u{fffd}z\n__\n");
        assert_eq!(annotated(order(&["2n"], "", None, false), b"a 10"), "a 10\n  __\n____\n");
        assert_eq!(
            annotated(order(&["2n"], "", None, false), b"  -3.5x y"),
            "  -3.5x y\n        ^ no match for key\n_________\n"
        );
        assert_eq!(
            annotated(order(&["2,2n"], "", Some(b' '), true), b"  -3.5x y"),
            "  -3.5x y\n ^ no match for key\n"
        );
        assert_eq!(annotated(order(&["1,1h"], "", None, true), b" -1.5Kx"), " -1.5Kx\n _____\n");
        assert_eq!(annotated(order(&["1,1M"], "", None, true), b"\tfebr"), ">febr\n ___\n");
        assert_eq!(annotated(order(&[], "g", None, true), b" 1e3x"), " 1e3x\n ___\n");
    }

    #[test]
    fn warnings_as_gnu_prints_them() {
        let w = |o: OrderOptions| o.debug_warnings()[1..].join("\n");
        assert_eq!(w(order(&[], "", None, false)), "");
        assert_eq!(
            w(order(&["2n"], "", None, false)),
            "key 1 is numeric and spans multiple fields\nnote numbers use '.' as a decimal point in this locale"
        );
        assert_eq!(
            w(order(&["1,1"], "", None, false)),
            "leading blanks are significant in key 1; consider also specifying 'b'"
        );
        assert_eq!(
            w(order(&["1,1n"], "r", Some(b','), false)),
            "note numbers use '.' as a decimal point in this locale\n\
             option '-r' only applies to last-resort comparison"
        );
        assert_eq!(
            w(order(&["1,1n"], "rf", Some(b','), true)),
            "note numbers use '.' as a decimal point in this locale\noptions '-fr' are ignored"
        );
        assert_eq!(w(order(&["2,1"], "", Some(b','), false)), "key 1 has zero width and will be ignored");
    }
}
