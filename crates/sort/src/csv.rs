//! CSV and TSV records (RFC 4180) as the sort reads them: where a record
//! ends ([`scan_ends`]) and its fields as a CSV parser sees them
//! ([`fields`]); the item codec of lines uses both for `--csv`.
//!
//! A field that starts with `"` is quoted: up to its closing quote it
//! holds separators, newlines and `""` (one quote). A quote anywhere else
//! is a byte of its field, as `csv-core`, Python's `csv` and DuckDB read
//! it. A record ends at a newline outside quotes, so a record may span
//! lines; a CR before that newline (CRLF files) is not a byte of its last
//! field. Records are written as they came: nothing is re-quoted.
//!
//! Both work on 64-byte blocks as bit masks of quotes, newlines and
//! separators, with the quoted bytes found by a prefix XOR of the quotes
//! (as simdjson and simdcsv find strings), and checked: where a quote is
//! a byte of its field the block goes through a byte-wise parse instead
//! (the ends: a parse state of two bits carried from one read to the next)
//! or `csv-core` (the fields). On a 1 GiB CSV export whose every record
//! has a quoted field, the byte-wise ends and `csv-core`'s unquoting were
//! 45 % of a sort's CPU time; with the masks the sort took 0.56× the CPU.
//! A record without quotes is split by the separator alone (its fields
//! cannot hold one). Keys (`-k`) then take the fields' values joined by
//! the separator, so `-k2,3` spans fields 2 and 3 as GNU `sort -t,` would.

use memchr::memchr;

use crate::line_ends::{line_ends, mask};

const QUOTE: u8 = b'"';

/// Parse states between two reads ([`scan_ends`]'s `state`): at a
/// field's start (0: also a record's), in an unquoted field, in a quoted
/// field, and just after a quote in a quoted field (its end, or the first
/// of `""`).
const START: u64 = 0;
const FIELD: u64 = 1;
const QUOTED: u64 = 2;
const QUOTE_IN_QUOTED: u64 = 3;

/// Finds the ends of the records in `data`, the next bytes of a sequence
/// of whole records with separator `sep`: calls `end` with the position of
/// each record's newline until it returns false. `state` is 0 at a
/// record's start and carries the parse from one call to the next.
///
/// Whole 64-byte blocks are parsed as bit masks (see [`Block`]); a block
/// whose quotes are not all syntax, and the last partial block, go through
/// the byte-wise machine ([`scan_scalar`]), which defines the parse.
pub(crate) fn scan_ends(data: &[u8], sep: u8, state: &mut u64, end: &mut dyn FnMut(usize) -> bool) {
    let (mut st, mut at) = (*state, 0);
    while at + 64 <= data.len() {
        let block = &data[at..at + 64];
        match Block::parse(block, !0, sep, st) {
            Some(b) => {
                let mut ends = b.newlines;
                while ends != 0 {
                    if !end(at + ends.trailing_zeros() as usize) {
                        *state = START;
                        return;
                    }
                    ends &= ends - 1;
                }
                st = b.state_after();
            }
            None => {
                if !scan_scalar(block, sep, &mut st, &mut |p| end(at + p)) {
                    *state = START;
                    return;
                }
            }
        }
        at += 64;
    }
    if !scan_scalar(&data[at..], sep, &mut st, &mut |p| end(at + p)) {
        st = START;
    }
    *state = st;
}

/// One 64-byte block's parse from bit masks, as simdjson and simdcsv find
/// strings: a byte is inside quotes when an odd number of quotes precede
/// it in its field's run of quoted text (a prefix XOR of the quote mask,
/// so `""` toggles twice and stays inside). That is the CSV parse exactly
/// when every quote that the parity says opens a quoted field is at a
/// field's start or right after a closing quote (`""`): a quote anywhere
/// else is a byte of an unquoted field, and the first such quote is always
/// one of these, so checking them finds every block the masks would get
/// wrong ([`Block::parse`] gives `None`).
struct Block {
    /// Bytes inside quotes (an opening quote is, its closing one not).
    inside: u64,
    /// Quotes that open and that close a quoted field by the parity; an
    /// opening one right after a closing one is `""`'s second quote.
    open: u64,
    close: u64,
    after_close: u64,
    /// Separators and newlines outside quotes.
    seps: u64,
    newlines: u64,
}

impl Block {
    /// The parse of `block` from parse state `state`; `valid`: the bits of
    /// its bytes (a short block is padded after them).
    fn parse(block: &[u8], valid: u64, sep: u8, state: u64) -> Option<Block> {
        let quotes = mask(block, QUOTE) & valid;
        let inside_before_block = u64::from(state == QUOTED);
        let inside = prefix_xor(quotes) ^ inside_before_block.wrapping_neg();
        let before = inside << 1 | inside_before_block;
        let (open, close) = (quotes & !before, quotes & before);
        let seps = mask(block, sep) & valid & !before;
        let newlines = mask(block, b'\n') & valid & !before;
        let field_start = (seps | newlines) << 1 | u64::from(state == START);
        let after_close = close << 1 | u64::from(state == QUOTE_IN_QUOTED);
        (open & !(field_start | after_close) == 0).then_some(Block {
            inside,
            open,
            close,
            after_close,
            seps,
            newlines,
        })
    }

    /// The parse state after the block's last byte (of a short block: its
    /// last valid byte's, or `FIELD` for `START` and `QUOTE_IN_QUOTED`,
    /// which only [`unquote_by_masks`]'s last block ends in).
    fn state_after(&self) -> u64 {
        if self.inside >> 63 != 0 {
            QUOTED
        } else if self.close >> 63 != 0 {
            QUOTE_IN_QUOTED
        } else if (self.seps | self.newlines) >> 63 != 0 {
            START
        } else {
            FIELD
        }
    }
}

/// Bit i of the result: the XOR of bits 0..=i of `x`.
#[inline]
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// The byte-wise parse, from `*state` to the end of `data` (then in
/// `*state`) or to the first call of `end` that returns false (then the
/// result is false).
fn scan_scalar(data: &[u8], sep: u8, state: &mut u64, end: &mut dyn FnMut(usize) -> bool) -> bool {
    let n = data.len();
    let (mut st, mut i, mut window) = (*state, 0, 64);
    if st == QUOTE_IN_QUOTED && n > 0 {
        (st, i) = if data[0] == QUOTE { (QUOTED, 1) } else { (FIELD, 0) };
    }
    while i < n {
        if st == QUOTED {
            match memchr(QUOTE, &data[i..]) {
                None => i = n,
                Some(k) if i + k + 1 == n => (st, i) = (QUOTE_IN_QUOTED, n),
                Some(k) if data[i + k + 1] == QUOTE => i += k + 2,
                Some(k) => (st, i) = (FIELD, i + k + 1),
            }
            continue;
        }
        // Outside quotes up to the next quote: every newline ends a record,
        // found 64 bytes at a time as lines' ends are. The quote is looked
        // for in growing windows, so that finding one record's end reads
        // about that record only.
        let lim = (i + window).min(n);
        window = (window * 2).min(1 << 16);
        let q = memchr(QUOTE, &data[i..lim]).map_or(lim, |k| i + k);
        for p in line_ends(&data[i..q], b'\n') {
            if !end(i + p) {
                return false;
            }
        }
        if q > i {
            st = if data[q - 1] == b'\n' || data[q - 1] == sep { START } else { FIELD };
        }
        if q < lim {
            // A quote opens a quoted field only at the field's start.
            st = if st == START { QUOTED } else { FIELD };
            i = q + 1;
        } else {
            i = lim;
        }
    }
    *state = st;
    true
}

/// What is wrong with an input whose records' parse ends in `state`
/// (`None`: nothing, its last record is whole).
pub(crate) fn unended(state: u64) -> Option<&'static str> {
    (state == QUOTED)
        .then_some("a quoted field has no closing quote (the record runs to the end of the input)")
}

/// How many fields each CSV record must have (`--fields[=N]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldCount {
    /// As many as the first record (the header, with `--header`).
    AsFirst,
    /// Exactly this many.
    Exactly(usize),
}

/// The check that every record has the field count asked for (`--fields`),
/// fed an input's bytes as they are read. An empty line is a record of
/// one empty field, as the keys see it.
#[derive(Debug, Clone)]
pub(crate) struct FieldCheck {
    sep: u8,
    /// The count asked for, and the count it means once known.
    asked: FieldCount,
    want: Option<usize>,
    state: u64,
    /// Fields of the record being read, less one.
    seps: usize,
    /// Newlines so far, and where the record being read starts.
    lines: u64,
    record_line: u64,
    /// Bytes since the last record's end.
    pending: bool,
}

/// A record whose field count is wrong: its line (1-based) and what.
pub(crate) type BadRecord = (u64, String);

impl FieldCheck {
    pub fn new(sep: u8, want: FieldCount) -> FieldCheck {
        let known = match want {
            FieldCount::AsFirst => None,
            FieldCount::Exactly(n) => Some(n),
        };
        FieldCheck {
            sep,
            asked: want,
            want: known,
            state: START,
            seps: 0,
            lines: 0,
            record_line: 0,
            pending: false,
        }
    }

    /// Checks the records that end in `data`, the input's next bytes.
    pub fn feed(&mut self, data: &[u8]) -> Result<(), BadRecord> {
        let (n, mut i) = (data.len(), 0);
        while i < n {
            self.pending = true;
            match self.state {
                QUOTED => match memchr(QUOTE, &data[i..]) {
                    None => {
                        self.lines += memchr::memchr_iter(b'\n', &data[i..]).count() as u64;
                        i = n;
                    }
                    Some(k) => {
                        self.lines += memchr::memchr_iter(b'\n', &data[i..i + k]).count() as u64;
                        (self.state, i) = (QUOTE_IN_QUOTED, i + k + 1);
                    }
                },
                // `""` inside quotes, or the field's closing quote.
                QUOTE_IN_QUOTED if data[i] == QUOTE => (self.state, i) = (QUOTED, i + 1),
                QUOTE_IN_QUOTED => self.state = FIELD,
                _ => match memchr::memchr3(self.sep, b'\n', QUOTE, &data[i..]) {
                    None => (self.state, i) = (FIELD, n),
                    Some(k) => {
                        let at_start = k == 0 && self.state == START;
                        match data[i + k] {
                            b if b == self.sep => (self.seps, self.state) = (self.seps + 1, START),
                            b'\n' => {
                                self.lines += 1;
                                self.end_record()?;
                            }
                            // A quote opens a quoted field only at its start.
                            _ => self.state = if at_start { QUOTED } else { FIELD },
                        }
                        i += k + 1;
                    }
                },
            }
        }
        Ok(())
    }

    /// At the input's end: checks a last record without a newline; the
    /// next input is read afresh (with the count asked for kept).
    pub fn finish(&mut self) -> Result<(), BadRecord> {
        let last = if self.pending { self.end_record() } else { Ok(()) };
        let want = self.want;
        *self = FieldCheck { want, ..FieldCheck::new(self.sep, self.asked) };
        last
    }

    fn end_record(&mut self) -> Result<(), BadRecord> {
        let (got, line) = (self.seps + 1, self.record_line + 1);
        (self.seps, self.state, self.record_line, self.pending) = (0, START, self.lines, false);
        match self.want {
            None => self.want = Some(got),
            Some(n) if n != got => {
                let s = if got == 1 { "" } else { "s" };
                let why = match self.asked {
                    FieldCount::AsFirst => "as the first record has",
                    FieldCount::Exactly(_) => "as --fields asks",
                };
                return Err((line, format!("the record has {got} field{s}, not {n} {why}")));
            }
            Some(_) => {}
        }
        Ok(())
    }
}

/// Reusable room to read records' fields: `csv-core`'s reader for one
/// separator and its output.
#[derive(Debug, Default)]
pub struct Unquote {
    reader: Option<(u8, csv_core::Reader)>,
    out: Vec<u8>,
    ends: Vec<usize>,
}

/// Whether `record` holds a quote: else its fields are split by the
/// separator alone, as `-t` splits a line's.
pub(crate) fn has_quote(record: &[u8]) -> bool {
    memchr(QUOTE, record).is_some()
}

/// The text of `record`'s fields (without its newline and CR): their
/// values, unquoted as `csv-core` reads them, joined by `sep` into `text`.
/// `ends` gets the separators' positions in that text, up to `upto` of
/// them, as `keys`' `split_fields` gives them for `-t`. With `rest`
/// false, the keys need nothing past the `upto`-th separator, and the text
/// may end there (a key on the second of six columns reads a third of
/// the record).
///
/// A record whose quotes are all syntax is unquoted from bit masks
/// ([`unquote_by_masks`]); any other goes through `csv-core`.
pub(crate) fn fields<'a>(
    record: &[u8],
    sep: u8,
    upto: usize,
    rest: bool,
    ends: &mut Vec<usize>,
    text: &'a mut Vec<u8>,
    room: &mut Unquote,
) -> &'a [u8] {
    if unquote_by_masks(record, sep, upto, rest, ends, text) {
        return text;
    }
    fields_by_csv_core(record, sep, upto, ends, text, room)
}

/// [`fields`] by the masks of [`Block`]: false (and `text`, `ends` to be
/// rewritten) when some quote is a byte of its field, or the record ends
/// inside quotes. Opening and closing quotes are dropped, but the second
/// quote of `""` inside a quoted field (which the parity sees as opening
/// right after a closing one) is the value's quote. Without `rest`, the
/// text ends at the `upto`-th separator (outside quotes: the fields
/// before it are whole).
fn unquote_by_masks(
    record: &[u8],
    sep: u8,
    upto: usize,
    rest: bool,
    ends: &mut Vec<usize>,
    text: &mut Vec<u8>,
) -> bool {
    text.clear();
    ends.clear();
    text.reserve(record.len());
    let (mut state, mut pad) = (START, [0u8; 64]);
    for chunk in record.chunks(64) {
        let (block, valid) = if chunk.len() == 64 {
            (chunk, !0)
        } else {
            pad[..chunk.len()].copy_from_slice(chunk);
            (&pad[..], (1u64 << chunk.len()) - 1)
        };
        let Some(b) = Block::parse(block, valid, sep, state) else {
            return false;
        };
        // The bytes between dropped quotes are copied as they are; a
        // separator outside quotes is a byte of the text too, whose place
        // `ends` records.
        let dropped = (b.open & !b.after_close) | b.close;
        let (mut events, mut from) = (dropped | b.seps, 0);
        while events != 0 {
            let i = events.trailing_zeros() as usize;
            if dropped >> i & 1 != 0 {
                text.extend_from_slice(&chunk[from..i]);
                from = i + 1;
            } else if ends.len() < upto {
                ends.push(text.len() + i - from);
                if !rest && ends.len() == upto {
                    text.extend_from_slice(&chunk[from..i]);
                    return true;
                }
            }
            events &= events - 1;
        }
        text.extend_from_slice(&chunk[from..]);
        state = b.state_after();
    }
    // A record ends outside quotes, else csv-core says what it holds.
    state != QUOTED
}

/// [`fields`] by `csv-core`'s parse.
fn fields_by_csv_core<'a>(
    record: &[u8],
    sep: u8,
    upto: usize,
    ends: &mut Vec<usize>,
    text: &'a mut Vec<u8>,
    room: &mut Unquote,
) -> &'a [u8] {
    let reader = match &mut room.reader {
        Some((s, r)) if *s == sep => r,
        r => {
            let built = csv_core::ReaderBuilder::new()
                .delimiter(sep)
                .terminator(csv_core::Terminator::Any(b'\n'))
                .build();
            &mut r.insert((sep, built)).1
        }
    };
    reader.reset();
    room.out.resize(record.len().max(1), 0);
    room.ends.resize(room.ends.len().max(8), 0);
    let (mut input, mut nout, mut nend) = (record, 0, 0);
    loop {
        let (res, i, o, e) = reader.read_record(input, &mut room.out[nout..], &mut room.ends[nend..]);
        (input, nout, nend) = (&input[i..], nout + o, nend + e);
        match res {
            csv_core::ReadRecordResult::InputEmpty => {}
            csv_core::ReadRecordResult::OutputFull => room.out.resize(room.out.len() * 2, 0),
            csv_core::ReadRecordResult::OutputEndsFull => room.ends.resize(room.ends.len() * 2, 0),
            csv_core::ReadRecordResult::Record | csv_core::ReadRecordResult::End => break,
        }
    }
    text.clear();
    ends.clear();
    let mut from = 0;
    for (i, &to) in room.ends[..nend].iter().enumerate() {
        if i > 0 {
            if ends.len() < upto {
                ends.push(text.len());
            }
            text.push(sep);
        }
        text.extend_from_slice(&room.out[from..to]);
        from = to;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The record ends of `data` read in pieces of `step` bytes.
    fn ends(data: &[u8], step: usize) -> Vec<usize> {
        let (mut v, mut state) = (Vec::new(), 0);
        for (i, piece) in data.chunks(step.max(1)).enumerate() {
            scan_ends(piece, b',', &mut state, &mut |p| {
                v.push(i * step + p);
                true
            });
        }
        v
    }

    /// `csv-core`'s record ends and fields of `data`: the oracle.
    fn csv_core_records(data: &[u8]) -> (Vec<usize>, Vec<Vec<Vec<u8>>>) {
        let mut r = csv_core::ReaderBuilder::new().terminator(csv_core::Terminator::Any(b'\n')).build();
        let (mut out, mut fends) = (vec![0; data.len() + 1], vec![0; data.len() + 1]);
        let (mut at, mut ends, mut records) = (0, Vec::new(), Vec::new());
        loop {
            let eof = at == data.len();
            let (res, i, _, e) = r.read_record(&data[at..], &mut out, &mut fends);
            at += i;
            match res {
                csv_core::ReadRecordResult::Record => {
                    // Not a record the input's end closes.
                    if !eof {
                        ends.push(at - 1);
                    }
                    let mut from = 0;
                    records.push(
                        fends[..e]
                            .iter()
                            .map(|&to| {
                                let f = out[from..to].to_vec();
                                from = to;
                                f
                            })
                            .collect(),
                    );
                }
                csv_core::ReadRecordResult::End => return (ends, records),
                _ => {}
            }
        }
    }

    fn csvish() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(b"ab,\"\n\r ".to_vec()), 0..300)
    }

    /// Longer inputs whose quotes are mostly syntax (quoted fields with
    /// separators, newlines and `""`), with a stray quote now and then: the
    /// blocks the masks parse and those they hand to the byte-wise parse.
    fn exportish() -> impl Strategy<Value = Vec<u8>> {
        let field = prop_oneof![
            4 => "[a-z ]{0,12}".prop_map(String::into_bytes),
            4 => "([a-z ,\n]|\"\"){0,20}".prop_map(|t| format!("\"{}\"", t).into_bytes()),
            1 => "[a-z\"]{0,4}".prop_map(String::into_bytes),
        ];
        let record = prop::collection::vec(field, 1..6).prop_map(|f| f.join(&b","[..]));
        prop::collection::vec(record, 0..40).prop_map(|r| {
            let mut v = r.join(&b"\n"[..]);
            v.push(b'\n');
            v
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The masks' parse is the byte-wise one: the same ends, and the
        /// same state at the end, however the input is cut.
        #[test]
        fn blocks_parse_as_the_bytewise_machine(data in prop_oneof![exportish(), csvish()], step in 1usize..400) {
            let (mut want, mut st) = (Vec::new(), START);
            scan_scalar(&data, b',', &mut st, &mut |p| { want.push(p); true });
            prop_assert_eq!(ends(&data, step), want);
            prop_assert_eq!(ends_state(&data), st);
            // Stopped at each end in turn, it resumes there.
            let mut at = 0;
            let mut got = Vec::new();
            loop {
                let mut first = None;
                let mut s = START;
                scan_ends(&data[at..], b',', &mut s, &mut |p| { first = Some(at + p); false });
                match first {
                    Some(p) => { got.push(p); at = p + 1; }
                    None => break,
                }
            }
            let (mut all, mut s) = (Vec::new(), START);
            scan_scalar(&data, b',', &mut s, &mut |p| { all.push(p); true });
            prop_assert_eq!(got, all);
        }
    }

    proptest! {
        /// Ends and fields agree with csv-core's parse, however the input
        /// is cut into reads (empty lines aside: csv-core skips them, the
        /// sort keeps them as records).
        #[test]
        fn ends_and_fields_as_csv_core_reads_them(data in prop_oneof![exportish(), csvish()], step in prop_oneof![1usize..9, 60usize..200]) {
            let mut data = data;
            data.retain(|&b| b != b'\r');
            data.dedup_by(|a, b| *a == b'\n' && *b == b'\n');
            if data.first() == Some(&b'\n') {
                data.remove(0);
            }
            let got = ends(&data, step);
            prop_assert_eq!(&got, &ends(&data, data.len().max(1)));
            let (want, records) = csv_core_records(&data);
            prop_assert_eq!(&got, &want);
            let (mut start, mut room, mut text, mut seps) = (0, Unquote::default(), Vec::new(), Vec::new());
            for (&e, rec) in got.iter().zip(&records) {
                let t = fields(&data[start..e], b',', usize::MAX, true, &mut seps, &mut text, &mut room).to_vec();
                let mut from = 0;
                for (i, f) in rec.iter().enumerate() {
                    let to = seps.get(i).copied().unwrap_or(t.len());
                    prop_assert_eq!(&t[from..to], f.as_slice());
                    from = to + 1;
                }
                prop_assert_eq!(seps.len() + 1, rec.len());
                start = e + 1;
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// The masks unquote a record as csv-core does, whenever they
        /// take it (a trailing CR stays a byte of the last field here: the
        /// keys cut it before), for any count of separators asked for;
        /// without the rest, up to the last separator asked for.
        #[test]
        fn masks_unquote_as_csv_core(data in prop_oneof![exportish(), csvish()], upto in prop_oneof![0usize..4, Just(usize::MAX)], rest: bool) {
            let (mut room, mut start) = (Unquote::default(), 0);
            let (mut text, mut seps, mut want_text, mut want_seps) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for e in ends(&data, data.len()).into_iter().chain([data.len()]) {
                let record = &data[start..e];
                if unquote_by_masks(record, b',', upto, rest, &mut seps, &mut text) {
                    fields_by_csv_core(record, b',', upto, &mut want_seps, &mut want_text, &mut room);
                    if !rest && upto > 0 && want_seps.len() == upto {
                        want_text.truncate(want_seps[upto - 1]);
                    }
                    prop_assert_eq!(&text, &want_text, "{:?}", String::from_utf8_lossy(record));
                    prop_assert_eq!(&seps, &want_seps);
                }
                start = (e + 1).min(data.len());
            }
        }
    }

    #[test]
    fn masks_take_records_whose_quotes_are_syntax() {
        let long = format!("7,\"{}\"\"q\"\"{}\",x", "a,b\n".repeat(15), "c".repeat(70));
        for (record, want) in [
            (
                "42,\"Smith, John\",\"line one\nline two\",3.50",
                Some("42,Smith, John,line one\nline two,3.50"),
            ),
            (long.as_str(), Some(&*format!("7,{}\"q\"{},x", "a,b\n".repeat(15), "c".repeat(70)))),
            ("\"\",\"\"\"\",\"a\"b", Some(",\",ab")),
            ("a\"b,c", None),
            ("\"open,c", None),
        ] {
            let (mut text, mut seps) = (Vec::new(), Vec::new());
            let took = unquote_by_masks(record.as_bytes(), b',', 9, true, &mut seps, &mut text);
            assert_eq!(took.then_some(&text[..]), want.map(str::as_bytes), "{record:?}");
        }
    }

    proptest! {
        /// The field check finds the first record whose count differs from
        /// the first record's, and its line, however the input is cut.
        #[test]
        fn field_check_finds_the_first_record_of_another_count(data in csvish(), step in 1usize..9) {
            let mut data = data;
            if data.last() != Some(&b'\n') {
                data.push(b'\n');
            }
            let ends = ends(&data, data.len());
            // The oracle: each record's field count and first line.
            let (mut start, mut want, mut counts) = (0, Ok(()), Vec::new());
            let (mut room, mut text, mut seps) = (Unquote::default(), Vec::new(), Vec::new());
            for &e in &ends {
                fields(&data[start..e], b',', usize::MAX, true, &mut seps, &mut text, &mut room);
                let line = 1 + data[..start].iter().filter(|&&b| b == b'\n').count() as u64;
                counts.push(seps.len() + 1);
                if want.is_ok() && seps.len() + 1 != counts[0] {
                    want = Err(line);
                }
                start = e + 1;
            }
            if start < data.len() {
                // An open quote at the end: not a record the check sees whole.
                return Ok(());
            }
            let mut check = FieldCheck::new(b',', FieldCount::AsFirst);
            let got = data.chunks(step).try_for_each(|c| check.feed(c)).and_then(|()| check.finish());
            prop_assert_eq!(got.map_err(|(line, _)| line), want);
        }
    }

    #[test]
    fn quoted_newlines_commas_and_quotes() {
        let data = b"1,\"a,b\nc\",x\n2,ab\"c,\"d\"\"e\"\r\n\"\"\"\",z\n";
        assert_eq!(ends(data, 3), vec![11, 26, 33]);
        let (mut room, mut text, mut seps) = (Unquote::default(), Vec::new(), Vec::new());
        let t = fields(&data[12..25], b',', 9, true, &mut seps, &mut text, &mut room);
        assert_eq!((t, seps.as_slice()), (&b"2,ab\"c,d\"e"[..], &[1, 6][..]));
        assert_eq!(unended(ends_state(b"1,\"open\n")), Some(unended(QUOTED).unwrap()));
        assert_eq!(unended(ends_state(b"1,\"closed\"")), None);
    }

    #[test]
    fn records_longer_than_a_block_sort_and_come_back_whole() {
        use crate::keys::{Key, LineOrder, OrderOptions};
        use crate::{sort_in_memory, Format, SortPlan};
        use std::io::Write;
        let mut o = OrderOptions { csv: true, ..Default::default() };
        o.keys.push(Key::parse("2,2n").unwrap());
        let order = LineOrder::new(o).unwrap();
        // Quoted fields of up to 6 KiB with newlines, separators and quotes.
        let mut data = Vec::new();
        for i in 0..1000u32 {
            let x = i.wrapping_mul(2_654_435_761);
            let body = "ab\n,\"\"".repeat((x % 1000) as usize);
            write!(data, "\"{}\",{}\r\n", body, x % 97).unwrap();
        }
        let expected = sort_in_memory(Format::Lines, false, b'\n', Some(&order), &data).unwrap();
        assert_eq!(ends(&expected, 4096).len(), 1000);
        let d = tempfile::tempdir().unwrap();
        let plan = SortPlan::builder(Format::Lines)
            .memory(256 << 10)
            .block_size(4096)
            .line_order(order)
            .temp_dir(d.path())
            .build()
            .unwrap();
        let mut sorter = crate::Sorter::new(plan).unwrap();
        data.chunks(1000).for_each(|c| sorter.push(c).unwrap());
        let mut got = Vec::new();
        for b in sorter.finish().unwrap().blocks() {
            let b = b.unwrap();
            assert_eq!(ends(&b, b.len()).last(), Some(&(b.len() - 1)), "a block of whole records");
            got.extend_from_slice(&b);
        }
        assert!(got == expected, "the sorter's order is the in-memory sort's");
    }

    fn ends_state(data: &[u8]) -> u64 {
        let mut s = 0;
        scan_ends(data, b',', &mut s, &mut |_| true);
        s
    }
}
