//! Where the records of a stream end, for front ends that cut an input
//! into pieces of whole records themselves ([`RecordEnds`]; emsort.ray's
//! chunks and samples, through the Python binding `LineOrder.record_spans`).
//!
//! A line ends at its terminator, but a CSV record ([`LineOrder::csv`])
//! may hold newlines in quotes: whether a byte in the middle of a file
//! ends a record depends on every quote before it, so the ends are found
//! by reading from the input's start, through the item codec's own parse
//! (`Codec::scan_ends`, the one run formation reads with), carried from
//! one block to the next: memory stays one block whatever the input.
//!
//! ```
//! use emsort_sort::keys::{LineOrder, OrderOptions};
//! use emsort_sort::record_ends::RecordEnds;
//! let order = LineOrder::new(OrderOptions { csv: true, ..OrderOptions::default() }).unwrap();
//! let mut ends = RecordEnds::new(b'\n', Some(&order));
//! let mut found = Vec::new();
//! for block in [&b"a,\"x\n"[..], b"y\"\nb,c\n"] {
//!     ends.feed(block, &mut |p| {
//!         found.push(p);
//!         true
//!     });
//! }
//! assert_eq!(found, [7, 11]); // the newline in quotes ends nothing
//! ```

use crate::codec::{self, SharedCodec};
use crate::keys::LineOrder;
use crate::Format;

/// The parse of record ends over one input, fed block by block.
pub struct RecordEnds {
    codec: SharedCodec,
    state: u64,
    /// Bytes fed so far: the offset of the next block.
    at: u64,
}

impl RecordEnds {
    /// The parse of lines ended by `eol`, or of CSV records when `order`
    /// says so ([`LineOrder::csv`]), from an input's first byte.
    pub fn new(eol: u8, order: Option<&LineOrder>) -> RecordEnds {
        RecordEnds { codec: codec::of(Format::Lines, false, eol, order), state: 0, at: 0 }
    }

    /// Parses the input's next bytes: calls `end` with the offset in the
    /// input of each record's terminator, in order, until it returns
    /// false (the parse then stops there: feed no more).
    pub fn feed(&mut self, data: &[u8], end: &mut dyn FnMut(u64) -> bool) {
        let at = self.at;
        codec::each_end(&*self.codec, data, &mut self.state, |p| end(at + p as u64));
        self.at += data.len() as u64;
    }

    /// At the input's end: why it cannot end here (a CSV quoted field
    /// without its closing quote), `None` when it can.
    pub fn unended(&self) -> Option<&'static str> {
        self.codec.unended(self.state)
    }

    /// The records whose terminators lie in `data`, a buffer of whole
    /// records but maybe the last (which may lack its terminator), plus
    /// that last one: how many items `data` holds.
    pub fn count(data: &[u8], eol: u8, order: Option<&LineOrder>) -> u64 {
        let mut ends = RecordEnds::new(eol, order);
        let (mut n, mut last) = (0u64, None);
        ends.feed(data, &mut |p| {
            n += 1;
            last = Some(p);
            true
        });
        n + u64::from(last.map_or(0, |p| p + 1) < data.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::OrderOptions;

    fn csv() -> LineOrder {
        LineOrder::new(OrderOptions { csv: true, ..OrderOptions::default() }).unwrap()
    }

    /// Fed a byte at a time or whole, the ends are those `line_spans`
    /// finds in the whole buffer.
    #[test]
    fn ends_across_blocks_match_line_spans() {
        let data = b"h1,h2\r\n\"a\nb\",\"x\"\"\n\"\n,\n\"\"\"\",z\nlast,\"q\n\"";
        let order = csv();
        let want: Vec<u64> = crate::line_spans(data, b'\n', Some(&order))
            .iter()
            .filter(|r| r.end < data.len())
            .map(|r| r.end as u64)
            .collect();
        for size in [1, 2, 3, 7, data.len()] {
            let mut ends = RecordEnds::new(b'\n', Some(&order));
            let mut got = Vec::new();
            for block in data.chunks(size) {
                ends.feed(block, &mut |p| {
                    got.push(p);
                    true
                });
            }
            assert_eq!(got, want, "blocks of {size}");
        }
        assert_eq!(RecordEnds::count(data, b'\n', Some(&order)), want.len() as u64 + 1);
        assert_eq!(RecordEnds::count(b"a\nb\n", b'\n', None), 2);
        assert_eq!(RecordEnds::count(b"a\nb", b'\n', None), 2);
        assert_eq!(RecordEnds::count(b"", b'\n', None), 0);
    }

    #[test]
    fn an_open_quote_at_the_end_is_unended() {
        let order = csv();
        let mut ends = RecordEnds::new(b'\n', Some(&order));
        ends.feed(b"a,\"b\nc\n", &mut |_| true);
        assert!(ends.unended().is_some());
        ends.feed(b"\"\n", &mut |_| true);
        assert_eq!(ends.unended(), None);
        assert_eq!(RecordEnds::new(b'\n', None).unended(), None);
    }

    #[test]
    fn stops_when_told() {
        let mut ends = RecordEnds::new(b'\n', None);
        let mut got = Vec::new();
        ends.feed(b"a\nb\nc\n", &mut |p| {
            got.push(p);
            got.len() < 2
        });
        assert_eq!(got, [1, 3]);
    }
}
