//! What an item is, for the merges: the item codec.
//!
//! A [`Codec`] says, for one family of formats, where an item ends in a
//! block, the bytes it is compared on, their ordered 8-byte prefix, how two
//! items compare when those tie, the *forecasting key* that stands for an
//! item before its block is read (SRM), and which items `-u` keeps one
//! of. One impl per family:
//!
//! | impl | items | compared on |
//! |---|---|---|
//! | [`Numbers`] | `u32` … `f64`, native byte order | the number's unsigned key ([`crate::key`]): the prefix is the whole key |
//! | [`Records`] | `rec:SIZE:KEY_OFFSET:KEY_LEN` | the key field, bytewise |
//! | [`Lines`] | bytes up to a terminator (`\n`, NUL under `-z`) | the whole line bytewise, or GNU `sort`'s keys compiled by a [`LineOrder`] into normalised keys, then its tie rules |
//!
//! Two items compare by their keys' prefixes, then by the keys
//! ([`Codec::cmp_keys`]), then by [`Codec::tie`] (a [`LineOrder`]'s `-V`
//! and `-R` keys and its last resort, unless `-s`/`-u`), then by the run
//! they come from (earlier runs first: `-s` and `-u` keep the input
//! order). A *head* is either an item or a forecasting key; both give the
//! same key bytes ([`HeadKey`]), so a forecasting key sorts exactly where
//! its item will.
//!
//! Where a terminated item ends is the codec's to say as well: lines end
//! at every terminator byte, found 64 bytes at a time; items that not
//! every terminator byte ends (a CSV record's quoted newline) parse their
//! ends ([`Codec::scan_ends`]), and every reader of items — run
//! formation's, the merge's, the DSM/SRM cursors — asks [`each_end`],
//! [`Codec::item_len`] or [`Codec::rest_len`].
//!
//! [`for_plan`] picks the codec of a [`SortPlan`]; DSM and SRM
//! (`pdisk/`) merge through it. Adding a format is one impl here and its
//! parser.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::chunk_sort::{self, Entry, KeyRoom};
use crate::key::prefix;
use crate::keys::{LineOrder, Scratch};
use crate::line_ends::each_line_end;
use crate::multiway::MergeKey;
use crate::plan::SortPlan;
use crate::run_store::{self, Order, SegmentMerge};
use crate::{Format, SortError};

/// How the merges see the items of one family of formats (see the
/// module docs). Keys are the bytes an item is compared on: a part of the
/// item ([`Codec::raw_key`]), or, when the codec [`Codec::normalises`],
/// the normalised key written from that part ([`Codec::normalise`]).
pub(crate) trait Codec: Send + Sync {
    /// The size of every item; `None` for terminated items.
    fn fixed(&self) -> Option<usize>;

    /// The byte that ends an item (terminated items only).
    fn terminator(&self) -> u8 {
        b'\n'
    }

    /// Whether each terminator byte ends an item (lines), so that readers
    /// find terminated items by that byte alone and may cut a block of
    /// them just after any of them. Items whose ends must be parsed from
    /// an item's start (a CSV record's quoted fields may hold the
    /// terminator) say no: readers find their ends by
    /// [`Codec::scan_ends`] and never cut between two guesses of theirs
    /// without checking that the first ends where the second starts.
    fn ends_at_terminators(&self) -> bool {
        true
    }

    /// Finds the ends of terminated items in `data`, the next bytes of a
    /// sequence of whole items read piece by piece: calls `end` with the
    /// position of each item's last byte (its terminator), in order,
    /// until it returns false. `state` is what the parse remembers from
    /// one piece to the next: 0 at an item's start.
    fn scan_ends(&self, data: &[u8], _state: &mut u64, end: &mut dyn FnMut(usize) -> bool) {
        each_line_end(data, self.terminator(), end)
    }

    /// What is wrong with an input whose parse of item ends
    /// ([`Codec::scan_ends`]) stops in `state` (a CSV record's quoted field
    /// never closed); `None`: its last item is whole, or only lacks its
    /// terminator.
    fn unended(&self, _state: u64) -> Option<&'static str> {
        None
    }

    /// Whether each item is checked as the input is read
    /// ([`Codec::check_item`]: a JSON line must be JSON).
    fn checks_items(&self) -> bool {
        false
    }

    /// What is wrong with one item (without its terminator), for codecs
    /// that check items; `None`: nothing.
    fn check_item(&self, _item: &[u8]) -> Option<String> {
        None
    }

    /// The length of the item at the start of `data` when it lies wholly
    /// there (with its terminator).
    #[inline]
    fn item_len(&self, data: &[u8]) -> Option<usize> {
        self.rest_len(&[], data)
    }

    /// How many bytes of `data` end the item whose first bytes are `carry`
    /// (an item's start, and not the whole item); `None` when `data` does
    /// not end it.
    fn rest_len(&self, carry: &[u8], data: &[u8]) -> Option<usize> {
        if let Some(s) = self.fixed() {
            let n = s - carry.len();
            return (data.len() >= n).then_some(n);
        }
        let mut state = 0;
        if !self.ends_at_terminators() {
            each_end(self, carry, &mut state, |_| true);
        }
        let mut len = None;
        each_end(self, data, &mut state, |p| {
            len = Some(p + 1);
            false
        });
        len
    }

    /// The bytes of a whole item it is compared on: the number, the key
    /// field, the line without its terminator. Also what a forecasting
    /// key of records and lines is made of.
    fn raw_key<'a>(&self, item: &'a [u8]) -> &'a [u8];

    /// Whether keys are written from the raw keys ([`Codec::normalise`])
    /// rather than read in place.
    fn normalises(&self) -> bool {
        false
    }

    /// Appends the normalised key of a raw key to `out`.
    fn normalise(&self, _raw: &[u8], _out: &mut Vec<u8>, _scratch: &mut Scratch) {}

    /// `Some(reverse)` when items whose normalised keys are equal are
    /// ordered by their raw keys bytewise and nothing else (GNU's last
    /// resort, descending when `reverse`; no `-s`, `-u`, `-V`, `-R` or
    /// collating locale): a merge may then append a raw key's first 8
    /// bytes to its normalised key ([`Codec::tie`] still decides between
    /// equal extended keys).
    fn bytewise_tie(&self) -> Option<bool> {
        None
    }

    /// Whether writing a normalised key costs much more than comparing two
    /// raw keys (a collating locale's keys are `strxfrm`s): a merge then
    /// gives a head whose raw key equals the one before it that one's key.
    fn costly_keys(&self) -> bool {
        false
    }

    /// The ordered prefix of a key (raw, normalised or forecast):
    /// unsigned order is the sort's order.
    fn key_prefix(&self, key: &[u8]) -> u64;

    /// The ordered prefix of a whole item (numbers: the whole key).
    #[inline]
    fn item_prefix(&self, item: &[u8]) -> u64 {
        self.key_prefix(self.raw_key(item))
    }

    /// The next 8 bytes of the comparison of an item whose key (raw or
    /// normalised) is `key` and raw key `raw`, after the key's prefix,
    /// ordered as prefixes are: the key's bytes 8 to 16. Items with equal
    /// prefixes and unequal `second`s compare as their `second`s do; 0
    /// when nothing cheap follows.
    #[inline]
    fn second(&self, key: &[u8], _raw: &[u8]) -> u64 {
        self.key_prefix(key.get(8..).unwrap_or_default())
    }

    /// `Some(mask)` when [`Codec::key_prefix`] is [`prefix`] XOR `mask`
    /// (all ones: descending), for any slice of a key: a merge then orders
    /// a key's bytes 16 to 24 so too, inline.
    fn key_mask(&self) -> Option<u64> {
        None
    }

    /// The raw key of a whole item with its prefix and [`Codec::second`],
    /// in one call (a merge makes a head of every item it reads).
    #[inline]
    fn head_of<'a>(&self, item: &'a [u8]) -> (&'a [u8], u64, u64) {
        let raw = self.raw_key(item);
        (raw, self.key_prefix(raw), self.second(raw, raw))
    }

    /// `Some(mask)` when [`Codec::head_of`] is a line's own bytes: the raw
    /// key is the item without its last byte, the prefix and the second
    /// are its bytes 0 to 8 and 8 to 16 XOR `mask` (all ones: descending).
    /// A merge then takes such heads inline rather than by a call per item
    /// (which cost 5 % of a 1 GiB lines sort's CPU time).
    fn bytewise_lines(&self) -> Option<u64> {
        None
    }

    /// Whether items with equal prefixes need [`Codec::cmp_keys`] (every
    /// family but numbers, whose prefix is the whole key).
    fn ties(&self) -> bool {
        true
    }

    /// Compares two keys in the sort's order.
    fn cmp_keys(&self, a: &[u8], b: &[u8]) -> Ordering;

    /// Compares two items with equal keys by their raw keys (a
    /// [`LineOrder`]'s `-V`/`-R` keys and last resort); `Equal` leaves
    /// them to the run order.
    fn tie(&self, _a: &[u8], _b: &[u8]) -> Ordering {
        Ordering::Equal
    }

    /// Appends the forecasting key of a whole item: a key that compares
    /// as the item does ([`HeadKey::forecast`]).
    fn forecast(&self, item: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(self.raw_key(item));
    }

    /// The length of every forecasting key; `None` when they vary.
    fn forecast_len(&self) -> Option<usize>;

    /// `-u`: the merge keeps only the first of items equal by the order
    /// ([`Codec::same`]).
    fn unique(&self) -> bool {
        false
    }

    /// Whether `a` and `b` (raw keys) are equal by the order, so that `-u`
    /// keeps only the first.
    fn same(&self, a: &[u8], b: &[u8]) -> bool {
        self.cmp_keys(a, b).is_eq()
    }

    /// Sorts a chunk of whole items in memory for a run, on the current
    /// rayon pool (module `chunk_sort`): in place ([`Order::InPlace`]) or
    /// into an index of its items. Terminated items come with the reader's
    /// index of them (`lines`, each entry's prefix by
    /// [`KeyRoom::line_prefix`](crate::chunk_sort::KeyRoom::line_prefix))
    /// and `long`, whether some key is longer than its prefix; `keyed`: the
    /// run may carry its items' keys ([`Order::KeyedLines`]).
    fn sort_chunk(&self, data: &mut [u8], lines: Vec<Entry>, long: bool, keyed: bool) -> Order;

    /// Whether [`Codec::sort_chunk`] sorts in place, so that a chunk may be
    /// read in segments, each sorted by [`Codec::sort_segment`] as soon as
    /// it is read, and its run written as their merge
    /// ([`Codec::segment_merge`]).
    fn in_place(&self) -> bool {
        false
    }

    /// Sorts a segment of whole items in place (codecs that sort in place).
    fn sort_segment(&self, _data: &mut [u8]) {
        unreachable!("only items sorted in place are sorted in segments")
    }

    /// How the sorted segments of a chunk are merged as its run is written
    /// (codecs that sort in place).
    fn segment_merge(&self) -> SegmentMerge {
        unreachable!("only items sorted in place are sorted in segments")
    }
}

/// Calls `f` on the position of each item end in `data` until it returns
/// false, as [`Codec::scan_ends`] does, in the terminator's own loop
/// where every terminator ends an item.
#[inline]
pub(crate) fn each_end<C: Codec + ?Sized>(
    codec: &C,
    data: &[u8],
    state: &mut u64,
    mut f: impl FnMut(usize) -> bool,
) {
    if codec.ends_at_terminators() {
        each_line_end(data, codec.terminator(), f)
    } else {
        codec.scan_ends(data, state, &mut f);
    }
}

/// The parse of item ends over one input, for codecs that parse them:
/// finds an input that ends inside an item ([`Codec::unended`]), and the
/// line that item starts on, for the error; for codecs that check their
/// items ([`Codec::checks_items`]), the first bad item and its line; and,
/// when the order asks for one, the check of CSV records' field counts
/// (`--fields`).
#[derive(Default)]
pub(crate) struct InputEnds {
    state: u64,
    /// Terminator bytes so far.
    lines: u64,
    /// The line the item being read starts on, less one.
    item_line: u64,
    /// The start of an item checked item by item, read so far.
    carry: Vec<u8>,
    fields: Option<Box<crate::csv::FieldCheck>>,
}

impl InputEnds {
    /// The parse for inputs ordered by `order`.
    pub fn new(order: Option<&LineOrder>) -> InputEnds {
        let fields =
            order.and_then(|o| Some(Box::new(crate::csv::FieldCheck::new(o.csv()?, o.field_count()?))));
        InputEnds { fields, ..InputEnds::default() }
    }

    /// Parses the input's next bytes (of the input named `name`).
    pub fn feed(&mut self, codec: &dyn Codec, data: &[u8], name: &std::path::Path) -> emsort_io::Result<()> {
        if codec.checks_items() {
            return self.check(codec, data).map_err(|(line, why)| bad_input(name, line, why));
        }
        let mut last = None;
        codec.scan_ends(data, &mut self.state, &mut |p| {
            last = Some(p);
            true
        });
        // Lines are counted per read, not per item (a count per item cost
        // a tenth of a CSV sort's time).
        let count = |d: &[u8]| memchr::memchr_iter(codec.terminator(), d).count() as u64;
        let upto = last.map_or(0, |p| p + 1);
        let before = self.lines + count(&data[..upto]);
        if last.is_some() {
            self.item_line = before;
        }
        self.lines = before + count(&data[upto..]);
        match &mut self.fields {
            Some(f) => f.feed(data).map_err(|(line, why)| bad_input(name, line, why)),
            None => Ok(()),
        }
    }

    /// Checks the whole items of the input's next bytes, one per
    /// terminator: on all threads when there are many of them.
    fn check(&mut self, codec: &dyn Codec, data: &[u8]) -> Result<(), (u64, String)> {
        let eol = codec.terminator();
        let Some(first) = memchr::memchr(eol, data) else {
            self.carry.extend_from_slice(data);
            return Ok(());
        };
        if !self.carry.is_empty() {
            self.carry.extend_from_slice(&data[..first]);
            let item = std::mem::take(&mut self.carry);
            self.check_one(codec, &item)?;
        } else {
            self.check_one(codec, &data[..first])?;
        }
        let last = memchr::memrchr(eol, data).expect("a terminator");
        let whole = &data[first + 1..=last];
        self.carry.extend_from_slice(&data[last + 1..]);
        const PIECE: usize = 1 << 20;
        if whole.len() < 2 * PIECE {
            return check_lines(codec, whole, self.lines).map(|n| self.lines += n);
        }
        // Pieces of whole lines, checked in parallel; the first bad line
        // of the first bad piece is the error (its line counted then).
        use rayon::prelude::*;
        let mut pieces = Vec::new();
        let mut at = 0;
        while at < whole.len() {
            let end = match memchr::memchr(eol, &whole[(at + PIECE).min(whole.len() - 1)..]) {
                Some(p) => (at + PIECE).min(whole.len() - 1) + p + 1,
                None => whole.len(),
            };
            pieces.push(&whole[at..end]);
            at = end;
        }
        let bad = pieces.par_iter().position_first(|p| check_lines(codec, p, 0).is_err());
        if let Some(i) = bad {
            let before: u64 = pieces[..i].iter().map(|p| memchr::memchr_iter(eol, p).count() as u64).sum();
            return check_lines(codec, pieces[i], self.lines + before).map(|_| ());
        }
        self.lines += memchr::memchr_iter(eol, whole).count() as u64;
        Ok(())
    }

    /// Checks one item, the next line.
    fn check_one(&mut self, codec: &dyn Codec, item: &[u8]) -> Result<(), (u64, String)> {
        self.lines += 1;
        match codec.check_item(item) {
            Some(why) => Err((self.lines, why)),
            None => Ok(()),
        }
    }

    /// At the end of the input named `name`: an error if it ends inside an
    /// item; the parse starts afresh for the next input.
    pub fn finish(&mut self, codec: &dyn Codec, name: &std::path::Path) -> emsort_io::Result<()> {
        let fields = self.fields.take();
        let InputEnds { state, item_line, carry, lines, .. } = std::mem::take(self);
        // A last line without its terminator.
        if codec.checks_items() && !carry.is_empty() {
            if let Some(why) = codec.check_item(&carry) {
                return Err(bad_input(name, lines + 1, why));
            }
        }
        if let Some(reason) = codec.unended(state) {
            return Err(bad_input(name, item_line + 1, reason.to_string()));
        }
        self.fields = fields;
        match &mut self.fields {
            Some(f) => f.finish().map_err(|(line, why)| bad_input(name, line, why)),
            None => Ok(()),
        }
    }

    /// Parses the file at `path` whole ([`InputEnds::finish`]'s error for
    /// a file that ends inside an item).
    pub fn check_file(codec: &dyn Codec, path: &std::path::Path) -> emsort_io::Result<()> {
        InputEnds::default().check_whole(codec, path)
    }

    /// Parses the file at `path` whole, as its own input.
    pub fn check_whole(&mut self, codec: &dyn Codec, path: &std::path::Path) -> emsort_io::Result<()> {
        use std::io::Read;
        let mut f = std::fs::File::open(path).map_err(|e| emsort_io::Error::from_io("open", path, e))?;
        let mut buf = vec![0; 1 << 20];
        loop {
            match f.read(&mut buf).map_err(|e| emsort_io::Error::from_io("read", path, e))? {
                0 => return self.finish(codec, path),
                n => self.feed(codec, &buf[..n], path)?,
            }
        }
    }
}

/// Checks the lines (each ended by the terminator) of `data`, the first
/// of them line `before + 1`: returns how many there are, or the first bad
/// one's line and what is wrong with it.
fn check_lines(codec: &dyn Codec, data: &[u8], before: u64) -> Result<u64, (u64, String)> {
    let mut n = 0;
    let mut start = 0;
    for p in memchr::memchr_iter(codec.terminator(), data) {
        n += 1;
        if let Some(why) = codec.check_item(&data[start..p]) {
            return Err((before + n, why));
        }
        start = p + 1;
    }
    Ok(n)
}

/// The error of a bad item on line `line` of the input `name`.
pub(crate) fn bad_input(name: &std::path::Path, line: u64, reason: String) -> emsort_io::Error {
    emsort_io::Error::new(emsort_io::ErrorKind::BadInput { line, reason }, name)
}

/// The lines of `data` ended by `eol` — CSV records when `order` says so,
/// which may span lines — as ranges without their terminators (a last one
/// may lack it).
pub fn line_spans(data: &[u8], eol: u8, order: Option<&LineOrder>) -> Vec<std::ops::Range<usize>> {
    let codec = of(Format::Lines, false, eol, order);
    let (mut out, mut start, mut state) = (Vec::new(), 0, 0);
    each_end(&*codec, data, &mut state, |p| {
        out.push(start..p);
        start = p + 1;
        true
    });
    if start < data.len() {
        out.push(start..data.len());
    }
    out
}

/// A codec shared by the threads of a sort.
pub(crate) type SharedCodec = Arc<dyn Codec>;

/// The codec of `plan`'s items.
pub(crate) fn for_plan(plan: &SortPlan) -> SharedCodec {
    of(plan.format(), plan.reverse(), plan.eol(), plan.line_order())
}

/// The codec of `format`, descending when `reverse`, lines ended by `eol`
/// and ordered by `order` (`None`: bytewise).
pub(crate) fn of(format: Format, reverse: bool, eol: u8, order: Option<&LineOrder>) -> SharedCodec {
    let mask = if reverse { u64::MAX } else { 0 };
    match format {
        Format::U32 => Arc::new(Numbers::<u32>::new(mask)),
        Format::I32 => Arc::new(Numbers::<i32>::new(mask)),
        Format::F32 => Arc::new(Numbers::<f32>::new(mask)),
        Format::U64 => Arc::new(Numbers::<u64>::new(mask)),
        Format::I64 => Arc::new(Numbers::<i64>::new(mask)),
        Format::F64 => Arc::new(Numbers::<f64>::new(mask)),
        Format::Rec(r) => {
            Arc::new(Records { size: r.size, key: r.key_offset..r.key_offset + r.key_len, mask, reverse })
        }
        Format::Lines => Arc::new(Lines::new(eol, reverse, order.cloned())),
    }
}

/// Sorts the items of `data` in memory, on the current rayon pool, exactly
/// as run formation sorts a chunk of them (the item codec's `sort_chunk`):
/// items of `format` (lines ended by `eol`; a last line may lack it), descending
/// when `reverse`, lines by `order` (`None`: bytewise). Returns them in
/// order, each line ended by `eol` (with `-u` in `order`, the first of
/// each group of equal lines only). Records with equal keys, and lines
/// equal by their keys, keep their order in `data`. Fails on bytes that
/// are not whole items, or on lines of 4 GiB or more in all (the chunks of
/// run formation are smaller; sort such data as a file).
///
/// ```
/// use emsort_sort::{sort_in_memory, Format};
/// let sorted = sort_in_memory(Format::Lines, false, b'\n', None, b"b\na\nc").unwrap();
/// assert_eq!(sorted, b"a\nb\nc\n");
/// ```
pub fn sort_in_memory(
    format: Format,
    reverse: bool,
    eol: u8,
    order: Option<&LineOrder>,
    data: &[u8],
) -> Result<Vec<u8>, SortError> {
    let mut data = data.to_vec();
    if format.item_size().is_some() {
        sort_items_in_place(format, reverse, &mut data)?;
        return Ok(data);
    }
    if data.last().is_some_and(|&b| b != eol) {
        data.push(eol);
    }
    let codec = of(format, reverse, eol, order);
    let (entries, long) = index(fits_index(&data)?, &*codec, order);
    let Order::Lines(index) = codec.sort_chunk(&mut data, entries, long, false) else {
        unreachable!("lines are sorted into an index")
    };
    let mut out = Vec::with_capacity(data.len());
    index.iter().for_each(|&(_, at, len)| out.extend_from_slice(&data[at as usize..][..len as usize + 1]));
    Ok(out)
}

/// Sorts the fixed-size items of `format` held in `data` in place, as
/// [`sort_in_memory`] does: numbers where they lie when `data` is aligned
/// for their type (else through an aligned copy), records through an
/// index, those with equal keys in their order in `data`.
pub fn sort_items_in_place(format: Format, reverse: bool, data: &mut [u8]) -> Result<(), SortError> {
    let size =
        format.item_size().ok_or_else(|| SortError::BadPlan(format!("{format} is not of fixed size")))?;
    if !data.len().is_multiple_of(size) {
        return Err(SortError::BadPlan(format!(
            "{} bytes are not whole {size}-byte items of format {format}",
            data.len()
        )));
    }
    let codec = of(format, reverse, b'\n', None);
    if codec.in_place() {
        if (data.as_ptr() as usize).is_multiple_of(size) {
            codec.sort_segment(data);
        } else {
            let mut aligned = vec![0u64; data.len().div_ceil(8)];
            let bytes = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..data.len()];
            bytes.copy_from_slice(data);
            codec.sort_segment(bytes);
            data.copy_from_slice(bytes);
        }
        return Ok(());
    }
    if data.len() / size > u32::MAX as usize {
        return Err(SortError::BadPlan(format!(
            "{} records to sort in memory: 2^32 is the most (sort them as a file)",
            data.len() / size
        )));
    }
    let Order::Records(index) = codec.sort_chunk(data, Vec::new(), false, false) else {
        unreachable!("records are sorted into an index")
    };
    let mut sorted = Vec::with_capacity(data.len());
    index.iter().for_each(|&(_, i)| sorted.extend_from_slice(&data[i as usize * size..][..size]));
    data.copy_from_slice(&sorted);
    Ok(())
}

/// The index of the lines of `text` (whole items of `codec`) for
/// [`chunk_sort::lines`], built on all threads, and whether some key is longer than a
/// prefix.
fn index(text: &[u8], codec: &dyn Codec, keys: Option<&LineOrder>) -> (Vec<Entry>, bool) {
    use rayon::prelude::*;
    let mut spans = Vec::new();
    let mut start = 0u32;
    each_end(codec, text, &mut 0, |nl| {
        spans.push((start, nl as u32 - start));
        start = nl as u32 + 1;
        true
    });
    let long = std::sync::atomic::AtomicBool::new(false);
    let entries = spans
        .into_par_iter()
        .map_init(KeyRoom::default, |room, (at, len)| {
            let (p, l) = room.line_prefix(keys, &text[at as usize..(at + len) as usize]);
            if l {
                long.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            (p, at, len)
        })
        .collect();
    (entries, long.into_inner())
}

/// `data`, when an index of u32 offsets can address it.
fn fits_index(data: &[u8]) -> Result<&[u8], SortError> {
    if data.len() > u32::MAX as usize {
        return Err(SortError::BadPlan(format!(
            "{} bytes of lines to sort in memory: 4 GiB is the most (sort them as a file)",
            data.len()
        )));
    }
    Ok(data)
}

/// Numbers of one type: compared on their unsigned key, which is the
/// prefix; forecast as that key's 8 big-endian bytes.
pub(crate) struct Numbers<T> {
    /// All ones when descending.
    mask: u64,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T> Numbers<T> {
    fn new(mask: u64) -> Self {
        Numbers { mask, _t: std::marker::PhantomData }
    }
}

impl<T: MergeKey> Codec for Numbers<T> {
    fn fixed(&self) -> Option<usize> {
        Some(std::mem::size_of::<T>())
    }

    #[inline]
    fn raw_key<'a>(&self, item: &'a [u8]) -> &'a [u8] {
        item
    }

    #[inline]
    fn key_prefix(&self, key: &[u8]) -> u64 {
        u64::from_be_bytes(key[..8].try_into().expect("an 8-byte forecasting key"))
    }

    #[inline]
    fn item_prefix(&self, item: &[u8]) -> u64 {
        let x: T = bytemuck::pod_read_unaligned(&item[..std::mem::size_of::<T>()]);
        x.key().into() ^ self.mask
    }

    fn ties(&self) -> bool {
        false
    }

    fn cmp_keys(&self, _a: &[u8], _b: &[u8]) -> Ordering {
        Ordering::Equal
    }

    fn forecast(&self, item: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(&self.item_prefix(item).to_be_bytes());
    }

    fn forecast_len(&self) -> Option<usize> {
        Some(8)
    }

    fn sort_chunk(&self, data: &mut [u8], _: Vec<Entry>, _: bool, _: bool) -> Order {
        self.sort_segment(data);
        Order::InPlace
    }

    fn in_place(&self) -> bool {
        true
    }

    fn sort_segment(&self, data: &mut [u8]) {
        chunk_sort::numbers::<T>(data, self.mask != 0);
    }

    fn segment_merge(&self) -> SegmentMerge {
        if self.mask != 0 {
            run_store::merge_segments::<T, true>
        } else {
            run_store::merge_segments::<T, false>
        }
    }
}

/// Fixed-size records compared bytewise on a key field.
pub(crate) struct Records {
    size: usize,
    key: std::ops::Range<usize>,
    mask: u64,
    reverse: bool,
}

impl Codec for Records {
    fn fixed(&self) -> Option<usize> {
        Some(self.size)
    }

    #[inline]
    fn raw_key<'a>(&self, item: &'a [u8]) -> &'a [u8] {
        &item[self.key.clone()]
    }

    #[inline]
    fn key_prefix(&self, key: &[u8]) -> u64 {
        prefix(key) ^ self.mask
    }

    fn key_mask(&self) -> Option<u64> {
        Some(self.mask)
    }

    #[inline]
    fn cmp_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        bytewise(a, b, self.reverse)
    }

    fn forecast_len(&self) -> Option<usize> {
        Some(self.key.len())
    }

    fn sort_chunk(&self, data: &mut [u8], _: Vec<Entry>, _: bool, _: bool) -> Order {
        chunk_sort::records(data, self.size, self.key.clone(), self.reverse)
    }
}

/// Terminated lines: bytewise (reversed by `-r`), or by a [`LineOrder`]'s
/// normalised keys and tie rules. A forecasting key is the line itself
/// (without its terminator), from which its normalised key is written
/// again.
pub(crate) struct Lines {
    eol: u8,
    /// Where items end: at each terminator, or as parsed.
    ends: Ends,
    /// JSON lines (`--jsonl`): each is checked as the input is read.
    json: bool,
    /// Bytewise and descending (a plain order's `-r`).
    reverse: bool,
    /// GNU keys (normalised) or a plain order with `-u`.
    order: Option<LineOrder>,
    /// Whether keys are normalised (an order with keys).
    normalised: bool,
}

/// Where lines end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    /// At each terminator byte.
    Terminators,
    /// CSV records with this separator (`--csv`): at a newline outside
    /// quotes (module `csv`).
    Csv(u8),
    /// Framed rows: where their lengths say (module `rows`).
    Rows,
}

impl Lines {
    fn new(eol: u8, reverse: bool, order: Option<LineOrder>) -> Lines {
        let normalised = order.as_ref().is_some_and(|o| !o.is_plain());
        // A plain order (here only with -u) keeps its -r on the bytes;
        // keyed orders invert their keys' bytes instead.
        let reverse = match &order {
            Some(o) => o.is_plain() && o.reverse(),
            None => reverse,
        };
        let ends = match &order {
            Some(o) if o.rows() => Ends::Rows,
            Some(o) => o.csv().map_or(Ends::Terminators, Ends::Csv),
            None => Ends::Terminators,
        };
        let json = order.as_ref().is_some_and(LineOrder::jsonl);
        Lines { eol, ends, json, reverse, order, normalised }
    }
}

impl Codec for Lines {
    fn fixed(&self) -> Option<usize> {
        None
    }

    fn terminator(&self) -> u8 {
        self.eol
    }

    fn ends_at_terminators(&self) -> bool {
        self.ends == Ends::Terminators
    }

    fn scan_ends(&self, data: &[u8], state: &mut u64, end: &mut dyn FnMut(usize) -> bool) {
        match self.ends {
            Ends::Terminators => each_line_end(data, self.eol, end),
            Ends::Csv(sep) => crate::csv::scan_ends(data, sep, state, end),
            Ends::Rows => crate::rows::scan_ends(data, state, end),
        }
    }

    fn unended(&self, state: u64) -> Option<&'static str> {
        match self.ends {
            Ends::Terminators => None,
            Ends::Csv(_) => crate::csv::unended(state),
            Ends::Rows => crate::rows::unended(state),
        }
    }

    fn checks_items(&self) -> bool {
        self.json
    }

    fn check_item(&self, item: &[u8]) -> Option<String> {
        self.json.then(|| crate::json::check(item).err()).flatten()
    }

    #[inline]
    fn raw_key<'a>(&self, item: &'a [u8]) -> &'a [u8] {
        &item[..item.len() - 1]
    }

    fn normalises(&self) -> bool {
        self.normalised
    }

    fn normalise(&self, raw: &[u8], out: &mut Vec<u8>, scratch: &mut Scratch) {
        if let Some(o) = &self.order {
            o.encode(raw, out, scratch);
        }
    }

    fn costly_keys(&self) -> bool {
        self.order.as_ref().is_some_and(|o| o.collates())
    }

    fn bytewise_tie(&self) -> Option<bool> {
        let o = self.order.as_ref().filter(|_| self.normalised)?;
        o.ties_bytewise().then_some(o.reverse())
    }

    /// A normalised key of at most 8 bytes is whole in its prefix: equal
    /// ones (the keys are prefix-free, so equal prefixes mean equal keys)
    /// go on to the last resort, if that is all that follows: the line's
    /// first 8 bytes (inverted under `-r`).
    #[inline]
    fn second(&self, key: &[u8], raw: &[u8]) -> u64 {
        match &self.order {
            Some(_) if self.normalised && key.len() <= 8 => match self.bytewise_tie() {
                Some(true) => !prefix(raw),
                Some(false) => prefix(raw),
                None => 0,
            },
            _ => self.key_prefix(key.get(8..).unwrap_or_default()),
        }
    }

    #[inline]
    fn key_prefix(&self, key: &[u8]) -> u64 {
        if self.reverse {
            !prefix(key)
        } else {
            prefix(key)
        }
    }

    fn bytewise_lines(&self) -> Option<u64> {
        (!self.normalised).then_some(if self.reverse { u64::MAX } else { 0 })
    }

    fn key_mask(&self) -> Option<u64> {
        Some(if self.reverse { u64::MAX } else { 0 })
    }

    #[inline]
    fn cmp_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        bytewise(a, b, self.reverse)
    }

    #[inline]
    fn tie(&self, a: &[u8], b: &[u8]) -> Ordering {
        match &self.order {
            Some(o) if self.normalised => o.compare_equal_forms(a, b),
            _ => Ordering::Equal,
        }
    }

    fn forecast_len(&self) -> Option<usize> {
        None
    }

    fn unique(&self) -> bool {
        self.order.as_ref().is_some_and(|o| o.unique())
    }

    fn same(&self, a: &[u8], b: &[u8]) -> bool {
        match &self.order {
            Some(o) => o.same(a, b),
            None => a == b,
        }
    }

    fn sort_chunk(&self, data: &mut [u8], lines: Vec<Entry>, long: bool, keyed: bool) -> Order {
        chunk_sort::lines(data, lines, long, keyed, self.reverse, self.order.as_ref())
    }
}

/// `a` against `b` bytewise, descending when `reverse`.
#[inline]
fn bytewise(a: &[u8], b: &[u8], reverse: bool) -> Ordering {
    if reverse {
        b.cmp(a)
    } else {
        a.cmp(b)
    }
}

/// The key of one head of a merge (an item or a forecasting key), kept
/// while it is the head: its prefix, its normalised key when the codec
/// normalises, and room to write it.
#[derive(Debug, Default)]
pub(crate) struct HeadKey {
    /// The ordered prefix.
    pub prefix: u64,
    norm: Vec<u8>,
    scratch: Scratch,
}

impl HeadKey {
    /// Takes the key of a whole item.
    #[inline]
    pub fn item(&mut self, c: &dyn Codec, item: &[u8]) {
        if c.normalises() {
            self.norm.clear();
            c.normalise(c.raw_key(item), &mut self.norm, &mut self.scratch);
            self.prefix = c.key_prefix(&self.norm);
        } else {
            self.prefix = c.item_prefix(item);
        }
    }

    /// Takes the key of a forecasting key ([`Codec::forecast`]).
    #[inline]
    pub fn forecast(&mut self, c: &dyn Codec, key: &[u8]) {
        if c.normalises() {
            self.norm.clear();
            c.normalise(key, &mut self.norm, &mut self.scratch);
            self.prefix = c.key_prefix(&self.norm);
        } else {
            self.prefix = c.key_prefix(key);
        }
    }

    /// The key bytes to compare: the normalised key, or `raw` (the head's
    /// raw key or forecasting key) when the codec does not normalise.
    #[inline]
    pub fn bytes<'a>(&'a self, c: &dyn Codec, raw: &'a [u8]) -> &'a [u8] {
        if c.normalises() {
            &self.norm
        } else {
            raw
        }
    }
}

/// Compares two heads whose prefixes are equal: their keys, then the tie
/// rules on their raw keys (`raw_a`, `raw_b`: the items' raw keys or the
/// forecasting keys, which for lines are the same bytes).
#[inline]
pub(crate) fn cmp_heads(c: &dyn Codec, a: &HeadKey, raw_a: &[u8], b: &HeadKey, raw_b: &[u8]) -> Ordering {
    c.cmp_keys(a.bytes(c, raw_a), b.bytes(c, raw_b)).then_with(|| c.tie(raw_a, raw_b))
}

/// A codec whose item ends only a parse finds, for tests: lines compared
/// bytewise in which each `"` opens or closes a quote and a newline inside
/// quotes is a byte of the line (a CSV record's ends, in short).
#[cfg(test)]
pub(crate) struct Quoted;

#[cfg(test)]
impl Quoted {
    /// The positions of the item ends of `data`, parsed in one pass.
    pub fn ends(data: &[u8]) -> Vec<usize> {
        let mut v = Vec::new();
        Quoted.scan_ends(data, &mut 0, &mut |p| {
            v.push(p);
            true
        });
        v
    }
}

#[cfg(test)]
impl Codec for Quoted {
    fn fixed(&self) -> Option<usize> {
        None
    }

    fn ends_at_terminators(&self) -> bool {
        false
    }

    fn scan_ends(&self, data: &[u8], state: &mut u64, end: &mut dyn FnMut(usize) -> bool) {
        for (i, &b) in data.iter().enumerate() {
            if b == b'"' {
                *state ^= 1;
            } else if b == b'\n' && *state == 0 && !end(i) {
                return;
            }
        }
    }

    fn raw_key<'a>(&self, item: &'a [u8]) -> &'a [u8] {
        &item[..item.len() - 1]
    }

    fn key_prefix(&self, key: &[u8]) -> u64 {
        prefix(key)
    }

    fn cmp_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    fn forecast_len(&self) -> Option<usize> {
        None
    }

    fn sort_chunk(&self, data: &mut [u8], lines: Vec<Entry>, long: bool, keyed: bool) -> Order {
        chunk_sort::lines(data, lines, long, keyed, false, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{Key, OrderOptions};

    /// Orders two whole items as a merge does (without the run index),
    /// also through their forecasting keys.
    fn cmp(c: &dyn Codec, a: &[u8], b: &[u8]) -> Ordering {
        let (mut ka, mut kb) = (HeadKey::default(), HeadKey::default());
        ka.item(c, a);
        kb.item(c, b);
        let by_items =
            ka.prefix.cmp(&kb.prefix).then_with(|| cmp_heads(c, &ka, c.raw_key(a), &kb, c.raw_key(b)));
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        c.forecast(a, &mut fa);
        c.forecast(b, &mut fb);
        if let Some(n) = c.forecast_len() {
            assert_eq!(fa.len(), n);
        }
        ka.forecast(c, &fa);
        kb.forecast(c, &fb);
        let by_forecasts = ka.prefix.cmp(&kb.prefix).then_with(|| cmp_heads(c, &ka, &fa, &kb, &fb));
        assert_eq!(by_items, by_forecasts, "forecasting keys order as their items");
        by_items
    }

    #[test]
    fn orders_like_the_format_and_forecasts_like_items() {
        for rev in [false, true] {
            let cases: Vec<(Format, Vec<Vec<u8>>)> = vec![
                (Format::I32, [-5i32, 0, 7].iter().map(|x| x.to_ne_bytes().to_vec()).collect()),
                (Format::F64, [-1.5f64, 0.0, f64::NAN].iter().map(|x| x.to_ne_bytes().to_vec()).collect()),
                ("rec:4:1:2".parse().unwrap(), vec![b"zaaz".to_vec(), b"aabz".to_vec(), b"abaa".to_vec()]),
                (
                    Format::Lines,
                    vec![
                        b"\n".to_vec(),
                        b"abcdefgh\n".to_vec(),
                        b"abcdefgh\0\n".to_vec(),
                        b"abcdefghijklmnopq\n".to_vec(),
                    ],
                ),
            ];
            for (format, items) in cases {
                let c = of(format, rev, b'\n', None);
                for a in &items {
                    assert_eq!(c.item_len(a), Some(a.len()));
                    if let Some(mask) = c.bytewise_lines() {
                        let raw = &a[..a.len() - 1];
                        let inline =
                            (raw, prefix(raw) ^ mask, prefix(raw.get(8..).unwrap_or_default()) ^ mask);
                        assert_eq!(c.head_of(a), inline, "heads taken inline are the codec's");
                    }
                    for b in &items {
                        let (x, y) = if format == Format::Lines {
                            (&a[..a.len() - 1], &b[..b.len() - 1])
                        } else {
                            (&a[..], &b[..])
                        };
                        let want = format.compare(x, y);
                        let want = if rev { want.reverse() } else { want };
                        assert_eq!(cmp(&*c, a, b), want, "{format} rev {rev}");
                    }
                }
            }
        }
    }

    /// Lines under GNU keys compare as [`LineOrder::compare`] says, by
    /// their items and by their forecasting keys; `-u` keeps one of lines
    /// equal by the keys.
    #[test]
    fn keyed_lines_order_as_the_line_order() {
        let lines: Vec<&[u8]> =
            vec![b"3,b,10", b"1,a,9.5", b"2,c,-1", b"4,a,10", b"x,a,1e3", b"5,,", b"1,a,9.50", b"0,z,abc"];
        for (keys, global, unique, stable) in [
            (vec!["3,3n"], None, false, false),
            (vec!["2,2", "3,3nr"], None, false, false),
            (vec!["3,3n"], None, true, false),
            (vec!["2,2"], Some('r'), false, true),
            (vec!["3,3V"], None, false, false),
        ] {
            let mut o = OrderOptions { tab: Some(b','), unique, stable, ..OrderOptions::default() };
            o.keys = keys.iter().map(|k| Key::parse(k).unwrap()).collect();
            if let Some(g) = global {
                o.global.set_global(g);
            }
            let lo = LineOrder::new(o).unwrap();
            let c = of(Format::Lines, false, b'\n', Some(&lo));
            for a in &lines {
                for b in &lines {
                    let (ia, ib) = ([*a, b"\n"].concat(), [*b, b"\n"].concat());
                    assert_eq!(cmp(&*c, &ia, &ib), lo.compare(a, b), "{keys:?} {a:?} {b:?}");
                    assert_eq!(c.same(a, b), lo.same(a, b));
                }
            }
            assert_eq!(c.unique(), unique);
        }
    }

    /// JSON lines under `--jsonl` keys: the codec orders as the line order,
    /// forecasting keys too; the in-memory sort is a stable sort by it; a
    /// line that is not JSON is what the codec's check finds.
    #[test]
    fn json_lines_order_as_the_line_order() {
        use crate::keys::JsonKey;
        let lines: Vec<&[u8]> = vec![
            br#"{"ts":3,"user":{"id":2,"name":"b"},"tags":["x"]}"#,
            br#"{"ts":1.5,"user":{"id":1,"name":"\u00e9"}}"#,
            br#"{"ts":"2","user":null}"#,
            br#"{"user":{"name":"a","id":2},"ts":-0}"#,
            br#"[1,{"a":null}]"#,
            br#"null"#,
            br#" {"ts":1e1,"tags":[]} "#,
            br#"{"ts":3,"user":{"id":2,"name":"b"},"tags":["x"]}"#,
        ];
        for (keys, reverse, unique, stable) in [
            (vec![], false, false, false),
            (vec![".ts:n"], false, false, true),
            (vec![".user.name", ".ts:nr"], false, false, false),
            (vec![".user.id"], true, true, false),
            (vec![".tags[0]:r", "."], false, false, true),
        ] {
            let mut o = OrderOptions { jsonl: true, unique, stable, ..OrderOptions::default() };
            o.json_keys = keys.iter().map(|k| JsonKey::parse(k).unwrap()).collect();
            if reverse {
                o.global.set_global('r');
            }
            let lo = LineOrder::new(o).unwrap();
            let c = of(Format::Lines, false, b'\n', Some(&lo));
            assert!(c.checks_items());
            for a in &lines {
                assert_eq!(c.check_item(a), None);
                for b in &lines {
                    let (ia, ib) = ([*a, b"\n"].concat(), [*b, b"\n"].concat());
                    assert_eq!(cmp(&*c, &ia, &ib), lo.compare(a, b), "{keys:?} {a:?} {b:?}");
                }
            }
            let text: Vec<u8> = lines.iter().flat_map(|l| [*l, b"\n"].concat()).collect();
            let mut want = lines.clone();
            want.sort_by(|a, b| lo.compare(a, b));
            if unique {
                want.dedup_by(|b, a| lo.same(a, b));
            }
            let want: Vec<u8> = want.iter().flat_map(|l| [*l, b"\n"].concat()).collect();
            assert_eq!(
                sort_in_memory(Format::Lines, false, b'\n', Some(&lo), &text).unwrap(),
                want,
                "{keys:?}"
            );
        }
        let lo = LineOrder::new(OrderOptions { jsonl: true, ..OrderOptions::default() }).unwrap();
        let c = of(Format::Lines, false, b'\n', Some(&lo));
        let f: &std::path::Path = "f".as_ref();
        // The line of a bad item, as an error's message says it.
        let line_of = |e: emsort_io::Error| match e.kind() {
            emsort_io::ErrorKind::BadInput { line, reason } => (*line, reason.clone()),
            k => panic!("{k:?}"),
        };
        let mut ends = InputEnds::default();
        assert!(ends.feed(&*c, b"{\"a\":1}\r\n[2,", f).is_ok());
        let e = ends.feed(&*c, b"3]\n\n", f).unwrap_err();
        assert_eq!(line_of(e), (3, "invalid JSON: a blank line".to_string()));
        let mut ends = InputEnds::default();
        assert!(ends.feed(&*c, b"1\n2\n[3", f).is_ok());
        assert!(ends.finish(&*c, f).unwrap_err().to_string().contains("f:3: invalid JSON"));
        // Pieces checked in parallel: the first bad line is named.
        let mut big: Vec<u8> = (0..400_000).flat_map(|i| format!("{{\"i\":{i}}}\n").into_bytes()).collect();
        let mut ends = InputEnds::default();
        assert!(ends.feed(&*c, &big, f).is_ok());
        big.extend_from_slice(b"1\n");
        big[1_000_000..1_000_010].copy_from_slice(b"xxxxxxxxxx");
        big[5_000_000] = b'x';
        let line = memchr::memchr_iter(b'\n', &big[..1_000_000]).count() as u64 + 1;
        let e = InputEnds::default().feed(&*c, &big, f).unwrap_err();
        assert_eq!(line_of(e).0, line);
    }

    /// The in-memory sort (run formation's, on one chunk) against
    /// `slice::sort_by` with [`LineOrder::compare`] or [`Format::compare`],
    /// stable, on generated items: lines under several key sets with `-u`
    /// and `-s`, records with many equal keys (which keep their order),
    /// numbers.
    #[test]
    fn sorts_in_memory_as_a_stable_sort_by_the_order() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut text = Vec::new();
        for _ in 0..5000 {
            let n = next();
            let amount = (n % 300) as f64 / 8.0 - 10.0;
            let name = [b'a' + (n >> 20) as u8 % 3, b'A' + (n >> 30) as u8 % 2];
            text.extend_from_slice(
                format!("{},{},{amount}", n >> 40 & 7, std::str::from_utf8(&name).unwrap()).as_bytes(),
            );
            text.push(b'\n');
        }
        text.pop(); // a last line without its terminator
        for (keys, global, unique, stable) in [
            (vec![], None, false, false),
            (vec![], Some('r'), true, false),
            (vec!["3,3n"], None, false, false),
            (vec!["2,2f", "3,3nr"], None, true, false),
            (vec!["1,1"], Some('r'), false, true),
            (vec!["2,2"], None, true, false),
        ] {
            let mut o = OrderOptions { tab: Some(b','), unique, stable, ..OrderOptions::default() };
            o.keys = keys.iter().map(|k| Key::parse(k).unwrap()).collect();
            if let Some(g) = global {
                o.global.set_global(g);
            }
            let lo = LineOrder::new(o).unwrap();
            let mut want: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
            want.sort_by(|a, b| lo.compare(a, b));
            if unique {
                want.dedup_by(|b, a| lo.same(a, b));
            }
            let want: Vec<u8> = want.iter().flat_map(|l| [*l, b"\n"].concat()).collect();
            let got = sort_in_memory(Format::Lines, false, b'\n', Some(&lo), &text).unwrap();
            assert!(got == want, "{keys:?} {global:?} unique {unique} stable {stable}");
        }
        // Keys of 10 bytes whose first 8 are all equal: the groups of equal
        // prefixes are sorted by comparison, and the stability is the
        // sort's, not the input's luck.
        let rec: Format = "rec:13:1:10".parse().unwrap();
        let records: Vec<u8> = (0..3000u16)
            .flat_map(|i| {
                // A byte, the key (8 equal bytes, 2 of a few values), the
                // record's place.
                let mut r = b"x01234567".to_vec();
                r.extend([b'a' + (next() % 4) as u8, b'a' + (next() % 3) as u8]);
                r.extend(i.to_be_bytes());
                r
            })
            .collect();
        for rev in [false, true] {
            let mut want: Vec<&[u8]> = records.chunks(13).collect();
            want.sort_by(|a, b| if rev { rec.compare(b, a) } else { rec.compare(a, b) });
            let got = sort_in_memory(rec, rev, b'\n', None, &records).unwrap();
            assert_eq!(got, want.concat(), "records, rev {rev}");
        }
        let numbers: Vec<u8> = (0..4001).flat_map(|_| (next() as i32 % 1000).to_ne_bytes()).collect();
        let mut want: Vec<i32> =
            numbers.chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect();
        want.sort();
        let got = sort_in_memory(Format::I32, false, b'\n', None, &numbers[1..]);
        assert!(got.is_err(), "not whole items");
        let got = sort_in_memory(Format::I32, false, b'\n', None, &numbers).unwrap();
        assert_eq!(got, bytemuck::cast_slice::<i32, u8>(&want));
    }
}
