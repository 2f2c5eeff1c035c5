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
//! The ends are found as lines' are between quotes, and from quote to
//! quote inside them (a parse state of two bits carried from one read to
//! the next); the
//! fields of a record with quotes are unquoted by `csv-core`, and those
//! of a record without by the separator alone (its fields cannot hold
//! one). Keys (`-k`) then take the fields' values joined by the
//! separator, so `-k2,3` spans fields 2 and 3 as GNU `sort -t,` would.

use memchr::memchr;

use crate::line_ends::line_ends;

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
pub(crate) fn scan_ends(data: &[u8], sep: u8, state: &mut u64, end: &mut dyn FnMut(usize) -> bool) {
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
                *state = START;
                return;
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
/// values, unquoted by `csv-core`, joined by `sep` into `text`. `ends`
/// gets the separators' positions in that text, up to `upto` of them, as
/// `keys`' `split_fields` gives them for `-t`.
pub(crate) fn fields<'a>(
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

    proptest! {
        /// Ends and fields agree with csv-core's parse, however the input
        /// is cut into reads (empty lines aside: csv-core skips them, the
        /// sort keeps them as records).
        #[test]
        fn ends_and_fields_as_csv_core_reads_them(data in csvish(), step in 1usize..9) {
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
                let t = fields(&data[start..e], b',', usize::MAX, &mut seps, &mut text, &mut room).to_vec();
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
                fields(&data[start..e], b',', usize::MAX, &mut seps, &mut text, &mut room);
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
        let t = fields(&data[12..25], b',', 9, &mut seps, &mut text, &mut room);
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
