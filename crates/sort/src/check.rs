//! `sort -c` / `-C`: whether lines are already in order, read once as a
//! stream with constant memory.

use std::cmp::Ordering;
use std::io::BufRead;

use crate::keys::LineOrder;

/// The first line out of order: its number (1-based; a CSV record's first
/// line) and bytes (without the terminator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disorder {
    /// Line number in the input.
    pub line: u64,
    /// The line's bytes.
    pub text: Vec<u8>,
}

/// Reads lines ended by `eol` from `input` and returns the first line that
/// comes before the one preceding it in `order` — or, with `-u`
/// ([`LineOrder::unique`]), that does not come strictly after it — or
/// `None` when the input is in order. CSV records ([`LineOrder::csv`])
/// are read whole, quoted newlines and all; one whose quote never closes
/// is an `InvalidData` error naming its line, as is a JSON line
/// ([`LineOrder::jsonl`]) that is not JSON. With `header`, the first line
/// (record) is a header, not compared (module `header`).
pub fn check_order(
    input: &mut dyn BufRead,
    order: &LineOrder,
    eol: u8,
    header: bool,
) -> std::io::Result<Option<Disorder>> {
    let strict = order.unique();
    let mut prev: Vec<u8> = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    let (mut n, mut lines) = (0u64, 0u64);
    if header {
        let h = crate::header::first_record(input, eol, Some(order))?;
        lines += memchr::memchr_iter(eol, &h).count() as u64;
    }
    loop {
        cur.clear();
        if input.read_until(eol, &mut cur)? == 0 {
            return Ok(None);
        }
        let line = lines + 1;
        lines += 1;
        if let Some(sep) = order.csv() {
            // A CSV record goes on past newlines in quotes.
            let (mut state, mut from, mut ended) = (0, 0, false);
            loop {
                crate::csv::scan_ends(&cur[from..], sep, &mut state, &mut |_| {
                    ended = true;
                    false
                });
                from = cur.len();
                if ended || cur.last() != Some(&eol) || input.read_until(eol, &mut cur)? == 0 {
                    break;
                }
                lines += 1;
            }
            if let Some(why) = crate::csv::unended(state) {
                let e = format!("line {line}: {why}");
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
            }
        }
        if cur.last() == Some(&eol) {
            cur.pop();
        }
        if order.jsonl() {
            if let Err(why) = crate::json::check(&cur) {
                let e = format!("line {line}: {why}");
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
            }
        }
        n += 1;
        if n > 1 {
            let o = order.compare(&prev, &cur);
            if o == Ordering::Greater || (strict && o == Ordering::Equal) {
                return Ok(Some(Disorder { line, text: cur }));
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{Key, OrderOptions};

    #[test]
    fn finds_the_first_disorder() {
        let plain = LineOrder::new(OrderOptions::default()).unwrap();
        assert_eq!(check_order(&mut &b"a\nb\nb\n"[..], &plain, b'\n', false).unwrap(), None);
        let d = check_order(&mut &b"a\nc\nb\nd"[..], &plain, b'\n', false).unwrap().unwrap();
        assert_eq!((d.line, d.text.as_slice()), (3, &b"b"[..]));
        let mut o = OrderOptions { unique: true, ..Default::default() };
        o.keys.push(Key::parse("1,1n").unwrap());
        let u = LineOrder::new(o).unwrap();
        assert_eq!(check_order(&mut &b"1 a\n01 b\n"[..], &u, b'\n', false).unwrap().unwrap().line, 2);
        let d = check_order(&mut &b"z\na\nc\nb\n"[..], &plain, b'\n', true).unwrap().unwrap();
        assert_eq!((d.line, d.text.as_slice()), (4, &b"b"[..]), "the header is not compared");
    }
}
