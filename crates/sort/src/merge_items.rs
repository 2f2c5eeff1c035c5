//! Merging records and lines in rounds, on all the sort's threads.
//!
//! Numbers are merged in rounds over the read-ahead blocks (module
//! [`multiway`](crate::multiway)); records and lines follow the same plan
//! with an index in place of the block itself, since their items are of
//! variable length (lines) or compared on a key field (records):
//!
//! 1. Each run's [`Window`] indexes its next items: about [`index_len`]
//!    [`Head`]s, each the item's key (its 8-byte prefix, then all of it)
//!    and where its bytes lie in the run's read-ahead block (or in the
//!    run's carry buffer, for the one item that straddles two blocks).
//!    Lines are indexed on all threads, the block cut into pieces at line
//!    ends (their mean length known from the window's last fill). For
//!    lines with GNU keys the key is the line's normalised key: read from
//!    the run when run formation wrote it there (a *keyed* run: each line
//!    after its key of [`KEY_BYTES`] bytes, when every key of the chunk
//!    fit in 8; such a run is indexed on all threads from guesses of where
//!    its items start, checked in order, as a key may hold the terminator
//!    byte: [`Window::index_keyed`]), else computed once per line and
//!    pass when the window is filled, [`KEY_CHUNK`] lines per task on all
//!    threads; keys shorter than 8 bytes are zero-padded either way, so
//!    heads from both
//!    kinds of run compare alike; items then compare with `memcmp`, and
//!    the lines are written without their keys.
//!    A run the sort wrote is in order; a file given to `sort -m` is
//!    checked window by window (see [`Window::fill`]).
//! 2. A round may emit every indexed item that is no later in the order
//!    than the *bound*, the earliest of the windows' last items: no item
//!    still on disk can come before it. When those items do not fit the
//!    output block, the selection is cut back ([`cut`]) to a prefix of the
//!    merged order.
//! 3. The selection is split into one part per thread at pivot items
//!    ([`split`]): part j holds, from every run, the items ordered before
//!    pivot j+1 and not before pivot j, so the parts' outputs are
//!    consecutive pieces of the output block and need no further merging.
//!    Each thread merges its part through a loser tree ([`HeadTree`],
//!    whose matches compare the heads' 8-byte prefixes, then the next 16
//!    bytes of the comparison 8 at a time, and call the full comparison
//!    only when those are equal; a long normalised key is followed by
//!    its line's first 8 bytes when those break its ties) straight into
//!    its piece:
//!    every item is copied once, from its run's block into the output
//!    block.
//! 4. With `-u`, each part leaves out a line equal to the one it wrote
//!    before (by the heads' keys), and the parts are joined with one
//!    comparison at each seam ([`join_pieces`]).
//! 5. A window whose items are all written is refilled; the block bytes its
//!    heads pointed to may be recycled only then.
//!
//! ```text
//!   run 0  [ a a a | b b b b ]· ·      bound: earliest last indexed item
//!   run 1  [ a a | b b | · · · ]       a: part 0, b: part 1 (threads)
//!   run 2  [ a a a a | b b ]· ·        ·: indexed, after the bound
//!   output [ a a a a a a a a a | b b b b b b b b ]
//! ```

use std::cmp::Ordering;

use emsort_io::{Error, ErrorKind, Result};
use rayon::prelude::*;

use crate::chunk_sort::KeyRoom;
use crate::codec::{Codec, InputEnds};
use crate::key::prefix;
use crate::line_ends::{first_end, line_ends};
use crate::read_ahead::BlockReader;
use crate::run_store::KEY_BYTES;
use crate::tree::LoserTree;
use crate::write_behind::WriteBehind;

/// A record or line indexed in its run's window: its key (an 8-byte
/// prefix, then all of it), and where its bytes are (a line with its
/// `\n`).
///
/// The bytes are in the run's current read-ahead block, or in the run's
/// carry buffer when the item straddles two blocks; the key is a part of
/// the item, or, for lines with GNU keys, their normalised key in the
/// window's key buffer. All stay put until the window is refilled
/// ([`Window::fill`]), which the merge does only once it has written out
/// every item of the window; so the pointers are valid for as long as the
/// head is in the window.
#[derive(Clone, Copy)]
struct Head {
    prefix: u64,
    /// The next 8 bytes of the comparison when the prefixes are equal
    /// ([`Codec::second`]). Equal prefixes and unequal `second`s order two
    /// heads as [`Order::cmp`] would.
    second: u64,
    ptr: *const u8,
    len: usize,
    key: *const u8,
    key_len: usize,
    /// The run's place among the merge's inputs: equal lines keep the
    /// inputs' order (`-s`, `-u`).
    run: u32,
    /// Bytes of the item before `ptr` that are not written out: the key of
    /// a keyed run's line ([`KEY_BYTES`]), else 0.
    skip: u32,
}

// SAFETY: a head is a read-only view of bytes that outlive the round in
// which the merge threads read them (see `Head`).
unsafe impl Send for Head {}
unsafe impl Sync for Head {}

impl Head {
    fn bytes(&self) -> &[u8] {
        // SAFETY: see `Head`: the bytes stay put while the head is indexed.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    fn key(&self) -> &[u8] {
        // SAFETY: as for `bytes`.
        unsafe { std::slice::from_raw_parts(self.key, self.key_len) }
    }

    /// The bytes the item is compared on ([`Codec::raw_key`]): the key
    /// field, the line without its terminator.
    fn raw<'h>(&'h self, c: &dyn Codec) -> &'h [u8] {
        c.raw_key(self.bytes())
    }
}

/// Heads whose keys one task normalises when a window is filled.
const KEY_CHUNK: usize = 256;

/// How items compare: by the plan's item codec ([`crate::codec`]), whose
/// keys the heads hold: the prefix, [`Codec::second`], the key, then the
/// codec's tie rules and the run (equal items keep the runs' order: `-s`,
/// `-u`).
#[derive(Clone, Copy)]
struct Order<'a> {
    codec: &'a dyn Codec,
    /// Whether keys are normalised from the items (else they are bytes of
    /// the items).
    normalised: bool,
    /// [`Codec::bytewise_lines`]: heads taken inline.
    bytewise: Option<u64>,
    /// [`Codec::bytewise_tie`]: a normalised key longer than 8 bytes is
    /// followed by its raw key's first 8 bytes.
    tie_bytes: Option<bool>,
    /// [`Codec::key_mask`]: how [`Order::third`] orders a key's bytes.
    key_mask: Option<u64>,
}

impl<'a> Order<'a> {
    fn new(codec: &'a dyn Codec) -> Order<'a> {
        let normalised = codec.normalises();
        let tie_bytes = codec.bytewise_tie().filter(|_| normalised);
        Order { codec, normalised, bytewise: codec.bytewise_lines(), tie_bytes, key_mask: codec.key_mask() }
    }

    /// The head of `item` of run `run`: its key is a part of the item, or
    /// none yet when keys are normalised ([`Order::normalise`] writes it).
    #[inline(always)]
    fn head(&self, item: &[u8], run: u32) -> Head {
        let (key, prefix, second) = match (self.normalised, self.bytewise) {
            (true, _) => (&item[..0], 0, 0),
            (false, Some(mask)) => {
                let raw = &item[..item.len() - 1];
                (raw, prefix(raw) ^ mask, prefix(raw.get(8..).unwrap_or_default()) ^ mask)
            }
            (false, None) => self.codec.head_of(item),
        };
        Head {
            prefix,
            second,
            ptr: item.as_ptr(),
            len: item.len(),
            key: key.as_ptr(),
            key_len: key.len(),
            run,
            skip: 0,
        }
    }

    /// The head of an item of a keyed run: its first [`KEY_BYTES`] bytes
    /// are the line's normalised key (zero-padded), the rest the line with
    /// its terminator.
    fn keyed_head(&self, item: &[u8], run: u32) -> Head {
        let (key, line) = item.split_at(KEY_BYTES);
        Head {
            prefix: self.codec.key_prefix(key),
            second: self.codec.second(key, self.codec.raw_key(line)),
            ptr: line.as_ptr(),
            len: line.len(),
            key: key.as_ptr(),
            key_len: KEY_BYTES,
            run,
            skip: KEY_BYTES as u32,
        }
    }

    /// Writes the normalised keys of `heads` into `room` (where they stay
    /// put until the window is refilled) and points the heads at them.
    fn normalise(&self, heads: &mut [Head], room: &mut KeyRoom) {
        let c = self.codec;
        room.key.clear();
        let mut ends = [0usize; KEY_CHUNK];
        // Costly keys: a line equal to the one before it (a run holds equal
        // lines together) takes its key.
        let costly = c.costly_keys();
        let mut last: Option<(&[u8], usize)> = None;
        for (h, end) in heads.iter_mut().zip(&mut ends) {
            let from = room.key.len();
            let raw = h.raw(c);
            match last {
                Some((prev, at)) if costly && prev == raw => room.key.extend_from_within(at..from),
                _ => c.normalise(raw, &mut room.key, &mut room.scratch),
            }
            if costly {
                // SAFETY: see `Head`: the head's bytes outlive this call.
                last = Some((unsafe { std::slice::from_raw_parts(raw.as_ptr(), raw.len()) }, from));
            }
            // Short keys zero-padded to 8 bytes, as keyed runs carry them:
            // a head's key then compares alike whichever run it comes from
            // (padding never changes how prefix-free keys compare).
            if room.key.len() - from < KEY_BYTES {
                room.key.resize(from + KEY_BYTES, 0);
            } else if let Some(reverse) = self.tie_bytes {
                // A long key, followed by what breaks its ties (the raw
                // key's first 8 bytes, inverted under `-r`, zero-padded
                // before): heads of equal keys are then told apart by
                // their `second`s or the keys' comparison (a sort by a
                // column of few values compares equal keys all the time:
                // for a CSV export by name, the ties took a third of the
                // merge). The keys are prefix-free, so no key's extension
                // changes how it compares with another key. A key of at
                // most 8 bytes is left as keyed runs carry it.
                let p = prefix(raw);
                room.key.extend_from_slice(&if reverse { !p } else { p }.to_be_bytes());
            }
            *end = room.key.len();
        }
        // Only now, with the buffer grown for good, take its addresses.
        let mut start = 0;
        for (h, &end) in heads.iter_mut().zip(&ends) {
            let key = &room.key[start..end];
            h.prefix = c.key_prefix(key);
            h.second = c.second(key, h.raw(c));
            h.key = key.as_ptr();
            h.key_len = key.len();
            start = end;
        }
    }

    /// The 8 bytes of the comparison after the head's `second`, ordered
    /// alike: its key's bytes 16 to 24 (zero-padded; 0 for a codec whose
    /// prefixes are not bytes: [`Codec::key_mask`]). Heads with equal
    /// prefixes and seconds and unequal thirds compare as their thirds
    /// do. Read from the key when wanted rather than kept in the head: a
    /// window holds as many heads as fit an eighth of its run's memory,
    /// and the merge of short items is bound by its rounds (1 GiB of
    /// words in a locale, 51 runs: 54,000 rounds of 1,900 words), which
    /// a larger head makes more of.
    #[inline]
    fn third(&self, h: &Head) -> u64 {
        match self.key_mask {
            Some(mask) if h.key_len > 16 => prefix(&h.key()[16..]) ^ mask,
            Some(mask) => mask,
            None => 0,
        }
    }

    /// `-u`: whether `a` and `b` are equal by the order (GNU keeps the
    /// first of them).
    #[inline]
    fn same(&self, a: &Head, b: &Head) -> bool {
        a.prefix == b.prefix
            && a.key() == b.key()
            && self.codec.tie(a.raw(self.codec), b.raw(self.codec)).is_eq()
    }

    /// Whether `a` comes strictly before `b` in the output.
    #[inline]
    fn before(&self, a: &Head, b: &Head) -> bool {
        self.cmp(a, b).is_lt()
    }

    /// Where `a` comes in the output against `b`.
    #[inline]
    fn cmp(&self, a: &Head, b: &Head) -> Ordering {
        let c = self.codec;
        // Unequal `second`s decide as the whole comparison would (see
        // `Head`): the bound, the cuts and the splits compare keys that
        // share their first 8 bytes (a sort by a column of few values)
        // without reading them. (For Parquet rows by `cat, ts DESC, id`,
        // the full comparisons took a fifth of the merge.)
        let o = a.prefix.cmp(&b.prefix).then(a.second.cmp(&b.second));
        if o.is_ne() {
            return o;
        }
        let o = self.third(a).cmp(&self.third(b));
        if o.is_ne() {
            return o;
        }
        let o = if a.key_len == b.key_len && a.key_len <= 8 {
            // Keys of at most 8 bytes are their prefixes.
            Ordering::Equal
        } else if a.key_len >= 24 && b.key_len >= 24 && self.key_mask.is_some() {
            // Equal prefixes, seconds and thirds: keys of 24 bytes or more
            // share their first 24 (and only those keys are long enough
            // for the skip to pay: words in a locale, whose keys repeat).
            c.cmp_keys(&a.key()[24..], &b.key()[24..])
        } else {
            c.cmp_keys(a.key(), b.key())
        };
        o.then_with(|| c.tie(a.raw(c), b.raw(c))).then(a.run.cmp(&b.run))
    }
}

/// Items a round needs before it is split across threads.
const PARALLEL_MIN: usize = 1024;

/// Heads indexed per window refill (lines: up to twice as many): enough
/// that a round moves hundreds of KiB and the rounds' fixed costs (the
/// bound, the split, waking the threads) stay small, few enough that the
/// index stays within half the read-ahead block (an eighth of the run's
/// memory b: [`SortPlan::merge_block`](crate::SortPlan::merge_block)).
/// (With 2048 heads, a 1 GiB merge of 36-byte lines made 15,000 rounds and
/// spent a third of its time between them.)
fn index_len(block: usize) -> usize {
    (block / 4 / std::mem::size_of::<Head>()).clamp(64, 16384)
}

/// What the merge knows of one of its runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunKind {
    /// The sort wrote it in order (else each window is checked).
    pub sorted: bool,
    /// Each line comes after its normalised key ([`KEY_BYTES`] bytes).
    pub keyed: bool,
}

/// Merges the runs behind `readers` (read-ahead blocks of `block` bytes)
/// into `out` with `threads` threads of `pool`; returns the bytes written.
/// Keyed runs ([`RunKind::keyed`]) give their lines' keys; every line is
/// written without one.
/// Lines end with `eol` (`\n`, or NUL under `-z`). `poll` reports progress
/// and checks the cancel flag every round.
#[allow(clippy::too_many_arguments)]
pub(crate) fn merge(
    readers: Vec<BlockReader>,
    kinds: &[RunKind],
    block: usize,
    codec: &dyn Codec,
    out: &mut WriteBehind<'_>,
    pool: &rayon::ThreadPool,
    threads: usize,
    poll: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<Moved> {
    let order = Order::new(codec);
    let cap = index_len(block);
    let mut wins: Vec<Window> = readers
        .into_iter()
        .enumerate()
        .zip(kinds)
        .map(|((i, src), kind)| Window {
            run: RunReader { src, ends: Ends::new(codec, kind.keyed), carry: Vec::new() },
            id: i as u32,
            items: Vec::new(),
            next: 0,
            done: false,
            rooms: Vec::new(),
            pieces: Vec::new(),
            avg_line: None,
            sorted: kind.sorted,
        })
        .collect();
    let mut counts = Vec::new();
    // Of each live window (in order), its items not yet written that are
    // safe to emit: those no later than the bound, the earliest of the
    // windows' last indexed items. The bound moves only when a window is
    // indexed anew or ends, so it is found again only then (a binary
    // search per window every round took 4.4 % of a 1 GiB Parquet sort's
    // CPU, 55 runs; 2.6 % so, its 135-byte rows refilling some window in
    // most rounds). Kept per window (`safe[i]` counts from `wins[i].next`).
    let mut safe: Vec<usize> = vec![0; wins.len()];
    let mut bounded = false;
    // Runs in order: the bound never moves back (a refilled window's items
    // come after those it held, an ended window leaves a larger minimum),
    // so each window's count is searched for forward from where it stood:
    // a round moves a few dozen items per window, and those heads are the
    // ones the merge reads next (binary searches of whole windows, 45 runs
    // of 111-byte Parquet rows, 33,000 refills: 11 % of the merge thread,
    // its heads out of the cache).
    let forward = kinds.iter().all(|k| k.sorted);
    let mut moved = Moved::default();
    // -u: the last line written, which the next one must differ from.
    let mut unique = codec.unique().then_some(None::<Vec<u8>>);
    loop {
        let mut refilled = !bounded;
        for (w, s) in wins.iter_mut().zip(&mut safe).filter(|(w, _)| !w.done && w.next == w.items.len()) {
            w.fill(&order, cap, pool)?;
            *s = 0;
            refilled = true;
        }
        let live: Vec<&[Head]> = wins.iter().filter(|w| !w.done).map(|w| &w.items[w.next..]).collect();
        if live.is_empty() {
            break;
        }
        if refilled {
            let bound = *live
                .iter()
                .map(|s| s.last().expect("a live window has items"))
                .reduce(|a, b| if order.before(b, a) { b } else { a })
                .expect("live");
            for (s, n) in live.iter().zip(of_live(&wins, &mut safe)) {
                *n = match forward {
                    true => count_from(s, *n, &bound, &order),
                    false => s.partition_point(|h| !order.before(&bound, h)),
                };
            }
            bounded = true;
        }
        counts.clear();
        counts.extend(wins.iter().zip(&safe).filter(|(w, _)| !w.done).map(|(_, &s)| s));
        debug_assert_eq!(counts.len(), live.len());
        // The bound's own window holds it, unless a run is out of order:
        // then nothing would be written, round after round.
        assert!(counts.iter().any(|&c| c > 0), "merge: a run is not in the merge's order");
        let want = selected_bytes(&live, &counts);
        let spare = out.spare_for(want)?;
        let bytes = if want <= spare.len() { want } else { cut(&live, &mut counts, spare.len(), &order) };
        if bytes > spare.len() {
            // One item larger than the output block's free part.
            let r = counts.iter().position(|&c| c > 0).expect("one item selected");
            let item = live[r][0].bytes();
            let keep = match &mut unique {
                Some(last) => {
                    let line = &item[..item.len() - 1];
                    let dup = last.as_deref().is_some_and(|l| codec.same(l, line));
                    if !dup {
                        *last = Some(line.to_vec());
                    }
                    !dup
                }
                None => true,
            };
            if keep {
                out.push(item)?;
                moved.written += item.len() as u64;
            }
        } else {
            let parts = if counts.iter().sum::<usize>() < PARALLEL_MIN { 1 } else { threads.max(1) };
            let parts = split(&live, &counts, parts, &order);
            let pieces = merge_parts(&live, &parts, &mut spare[..bytes], &order, pool, unique.is_some());
            let kept = match &mut unique {
                Some(last) => join_pieces(&mut spare[..bytes], &pieces, codec, last),
                None => bytes,
            };
            out.commit(kept);
            moved.written += kept as u64;
        }
        drop(live);
        for (w, &c) in wins.iter_mut().filter(|w| !w.done).zip(&counts) {
            w.next += c;
        }
        for (s, &c) in of_live(&wins, &mut safe).zip(&counts) {
            *s -= c;
        }
        moved.read += bytes as u64;
        poll(bytes as u64)?;
    }
    Ok(moved)
}

/// The entries of `per` (one per window) of the windows not done, in order.
fn of_live<'a, T>(wins: &'a [Window], per: &'a mut [T]) -> impl Iterator<Item = &'a mut T> {
    wins.iter().zip(per).filter(|(w, _)| !w.done).map(|(_, x)| x)
}

/// How many of `items` (in order) come no later than `bound`, knowing that
/// the first `known` do: a galloping search forward from `known` (steps of
/// 1, 2, 4, … then a binary search within the last step).
fn count_from(items: &[Head], known: usize, bound: &Head, order: &Order) -> usize {
    let mut lo = known;
    let mut step = 1;
    let hi = loop {
        let probe = lo + step - 1;
        match items.get(probe) {
            None => break items.len(),
            Some(h) if order.before(bound, h) => break probe,
            Some(_) => {
                lo = probe + 1;
                step *= 2;
            }
        }
    };
    lo + items[lo..hi].partition_point(|h| !order.before(bound, h))
}

/// What a merge moved: bytes of the runs read, bytes written (fewer with
/// `-u`).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Moved {
    pub read: u64,
    pub written: u64,
}

/// `-u`: joins the pieces of `block` that [`merge_parts`] wrote, each
/// `(len, kept)`: its first `kept` bytes are its lines (each ended by
/// `eol`) without repeats.
/// Moves them together, dropping a piece's first line when it repeats the
/// line before it (the previous piece's last, or `last` from the previous
/// round), and remembers the last line; returns the bytes kept.
fn join_pieces(
    block: &mut [u8],
    pieces: &[(usize, usize)],
    codec: &dyn Codec,
    last: &mut Option<Vec<u8>>,
) -> usize {
    let mut kept = 0usize;
    let mut start = 0usize;
    // Where the last kept line lies in the block, once there is one.
    let mut prev: Option<(usize, usize)> = None;
    for &(len, n) in pieces {
        let mut from = start;
        let to = start + n;
        if from < to {
            let end =
                from + codec.item_len(&block[from..to]).expect("merged lines end with their terminator") - 1;
            let dup = match prev {
                Some((s, e)) => codec.same(&block[s..e], &block[from..end]),
                None => last.as_deref().is_some_and(|l| codec.same(l, &block[from..end])),
            };
            if dup {
                from = end + 1;
            }
        }
        if from < to {
            block.copy_within(from..to, kept);
            kept += to - from;
            let start = kept - (to - from);
            let line_start = match codec.ends_at_terminators() {
                true => {
                    memchr::memrchr(codec.terminator(), &block[..kept - 1]).map_or(0, |p| p + 1).max(start)
                }
                false => {
                    let mut at = start;
                    while let Some(n) = codec.item_len(&block[at..kept]).filter(|&n| at + n < kept) {
                        at += n;
                    }
                    at
                }
            };
            prev = Some((line_start, kept - 1));
        }
        start += len;
    }
    if let Some((s, e)) = prev {
        *last = Some(block[s..e].to_vec());
    }
    kept
}

/// Bytes of the first `counts[r]` items of each slice.
fn selected_bytes(live: &[&[Head]], counts: &[usize]) -> usize {
    live.iter().zip(counts).map(|(s, &c)| first_bytes(s, c)).sum()
}

/// Bytes of the first `c` items of a window's heads, in constant time:
/// the items after the first lie one after another in the run's block
/// ([`Window::fill`] indexes consecutive items; only the first may be in
/// the carry buffer). (Summing the heads' lengths instead cost a pass over
/// every selected head, several per round when the selection is cut: a
/// tenth of a merge of short lines, on one thread.)
/// A keyed run's items hold a key that is not written: the span is less
/// those keys.
#[inline]
fn first_bytes(s: &[Head], c: usize) -> usize {
    let bytes = match c {
        0 => 0,
        1 => s[0].len,
        _ => {
            let skip = s[1].skip as usize;
            let span = s[c - 1].ptr as usize + s[c - 1].len - (s[1].ptr as usize - skip);
            s[0].len + span - skip * (c - 1)
        }
    };
    debug_assert_eq!(bytes, s[..c].iter().map(|h| h.len).sum::<usize>());
    bytes
}

/// Shrinks the selection `counts` (a prefix of the merged order) to a
/// shorter prefix of at most `cap` bytes, or to one item; returns its bytes.
///
/// Each step picks a selected item x and keeps, of x's run, the items up to
/// x, and of every other run the items strictly before x: everything kept
/// is ≤ x ≤ everything dropped. x is the middle item of the largest
/// selection, or, when that frees nothing, the earliest of the selections'
/// last items (then every other run with a selection loses its last item).
fn cut(live: &[&[Head]], counts: &mut [usize], cap: usize, order: &Order) -> usize {
    let mut bytes = selected_bytes(live, counts);
    while bytes > cap && counts.iter().sum::<usize>() > 1 {
        let nonempty = counts.iter().filter(|&&c| c > 0).count();
        let (r, i) = if nonempty == 1 {
            let r = counts.iter().position(|&c| c > 0).expect("one");
            counts[r] = counts[r].div_ceil(2);
            bytes = selected_bytes(live, counts);
            continue;
        } else {
            let r = (0..counts.len()).max_by_key(|&r| counts[r]).expect("runs");
            (r, (counts[r] - 1) / 2)
        };
        let before = counts.iter().sum::<usize>();
        keep_up_to(live, counts, r, i, order);
        if counts.iter().sum::<usize>() == before {
            let r = (0..counts.len())
                .filter(|&r| counts[r] > 0)
                .reduce(
                    |a, b| if order.before(&live[b][counts[b] - 1], &live[a][counts[a] - 1]) { b } else { a },
                )
                .expect("nonempty");
            keep_up_to(live, counts, r, counts[r] - 1, order);
        }
        bytes = selected_bytes(live, counts);
    }
    bytes
}

/// Keeps item `i` of run `r` and what comes before it in every run.
fn keep_up_to(live: &[&[Head]], counts: &mut [usize], r: usize, i: usize, order: &Order) {
    let x = live[r][i];
    for (s, c) in counts.iter_mut().enumerate() {
        *c = if s == r { i + 1 } else { live[s][..*c].partition_point(|h| order.before(h, &x)) };
    }
}

/// Splits the selection into `parts` parts: `bounds[j][r]` is where part j
/// starts in run r (`bounds[parts]` = `counts`). Pivot j is the median of
/// the runs' items at fraction j/parts of their selections.
fn split(live: &[&[Head]], counts: &[usize], parts: usize, order: &Order) -> Vec<Vec<usize>> {
    let mut bounds = Vec::with_capacity(parts + 1);
    bounds.push(vec![0; counts.len()]);
    let mut cands = Vec::with_capacity(counts.len());
    for j in 1..parts {
        cands.clear();
        cands.extend((0..counts.len()).filter(|&r| counts[r] > 0).map(|r| live[r][counts[r] * j / parts]));
        cands.sort_unstable_by(|a, b| order.cmp(a, b));
        let pivot = cands[cands.len() / 2];
        let prev: &Vec<usize> = bounds.last().expect("part 0");
        let b: Vec<usize> = (0..counts.len())
            .map(|r| {
                let at = live[r][..counts[r]].partition_point(|h| order.before(h, &pivot));
                at.max(prev[r])
            })
            .collect();
        bounds.push(b);
    }
    bounds.push(counts.to_vec());
    bounds
}

/// Merges each part into its piece of `out` (the parts' bytes, in order),
/// the parts in parallel on `pool`; returns each piece's length and the
/// bytes written at its front (fewer with `unique`: see [`merge_part`]).
fn merge_parts(
    live: &[&[Head]],
    bounds: &[Vec<usize>],
    out: &mut [u8],
    order: &Order,
    pool: &rayon::ThreadPool,
    unique: bool,
) -> Vec<(usize, usize)> {
    let mut pieces: Vec<(Vec<&[Head]>, &mut [u8])> = Vec::with_capacity(bounds.len() - 1);
    let mut rest = out;
    for j in 0..bounds.len() - 1 {
        let part: Vec<&[Head]> =
            live.iter().enumerate().map(|(r, s)| &s[bounds[j][r]..bounds[j + 1][r]]).collect();
        let len = part.iter().map(|s| first_bytes(s, s.len())).sum();
        let (piece, tail) = rest.split_at_mut(len);
        rest = tail;
        pieces.push((part, piece));
    }
    debug_assert!(rest.is_empty());
    let mut written = vec![(0usize, 0usize); pieces.len()];
    if pieces.len() == 1 {
        let (part, piece) = pieces.pop().expect("one part");
        written[0] = (piece.len(), merge_part(&part, piece, order, unique));
        return written;
    }
    pool.install(|| {
        pieces
            .into_par_iter()
            .zip(written.par_iter_mut())
            .for_each(|((part, piece), w)| *w = (piece.len(), merge_part(&part, piece, order, unique)))
    });
    written
}

/// Merges the sorted slices `part` into `out`, which is exactly as long as
/// their items' bytes; returns the bytes written. With `unique` (`-u`), a
/// line equal to the line written before it is left out.
fn merge_part(part: &[&[Head]], out: &mut [u8], order: &Order, unique: bool) -> usize {
    let mut at = 0;
    let mut prev: Option<Head> = None;
    let mut put = |h: &Head| {
        if unique {
            if prev.is_some_and(|p| order.same(&p, h)) {
                return;
            }
            prev = Some(*h);
        }
        crate::run_store::copy_item(&mut out[at..at + h.len], h.bytes());
        at += h.len;
    };
    let mut nonempty = part.iter().filter(|s| !s.is_empty());
    if let (Some(s), None) = (nonempty.next(), nonempty.next()) {
        s.iter().for_each(&mut put);
        return at;
    }
    let mut tree = HeadTree::new(part, order);
    while let Some(h) = tree.pop() {
        put(h);
    }
    at
}

/// The heads of a part's slices in the crate's loser tree
/// ([`LoserTree`]), each match played on the heads' 8-byte prefixes,
/// their [`Head::second`]s and [`Order::third`]s, kept in the tree as the
/// entry `(prefix, second, third, source)` (all ordered as the codec
/// orders keys): integer comparisons decide a match unless all are equal,
/// and only then is the full [`Order::cmp`] called (for `-t, -k3,3n` on a
/// CSV, whose amounts repeat, `second` — the line's first bytes — spares
/// most of those calls; the heads a merge compares are neighbours in the
/// order, which share long prefixes: for a CSV export by name, `third`
/// spared most of the rest). (A general loser tree that called the comparison closure out of
/// line for every match took half the merge's time for lines.)
/// An exhausted source holds the largest prefix and loses to every live
/// one; ties of the full order go to the lower source, the earlier run.
struct HeadTree<'p, 'a> {
    heads: Heads<'p, 'a>,
    tree: LoserTree<Entry>,
}

/// The sources of a [`HeadTree`] and where each stands.
struct Heads<'p, 'a> {
    part: &'p [&'a [Head]],
    /// The next item of each source.
    pos: Vec<usize>,
    order: &'p Order<'p>,
}

/// A [`HeadTree`]'s entry when there is no source.
const NO_HEAD: Entry = (u64::MAX, u64::MAX, u64::MAX, u32::MAX);

/// A [`HeadTree`]'s entry: a head's prefix, second and third, its source.
type Entry = (u64, u64, u64, u32);

impl<'p, 'a> HeadTree<'p, 'a> {
    fn new(part: &'p [&'a [Head]], order: &'p Order<'p>) -> Self {
        let heads = Heads { part, pos: vec![0; part.len()], order };
        let leaves: Vec<Entry> = (0..part.len()).map(|s| heads.entry(s)).collect();
        let tree = LoserTree::new(&leaves, NO_HEAD, |a, b| heads.beats(a, b));
        HeadTree { heads, tree }
    }

    /// The smallest head, taken from its source (the tree replays its
    /// path); `None` once every source is exhausted.
    #[inline]
    fn pop(&mut self) -> Option<&'a Head> {
        let s = self.tree.winner().3 as usize;
        let h = &mut self.heads;
        let head = h.part.get(s)?.get(h.pos[s])?;
        h.pos[s] += 1;
        let next = h.entry(s);
        let heads = &self.heads;
        self.tree.replace(s, next, |a, b| heads.beats(a, b));
        Some(head)
    }
}

impl Heads<'_, '_> {
    /// Source `s`'s entry for its current head.
    #[inline]
    fn entry(&self, s: usize) -> Entry {
        match self.part[s].get(self.pos[s]) {
            Some(h) => (h.prefix, h.second, self.order.third(h), s as u32),
            None => (u64::MAX, u64::MAX, u64::MAX, s as u32),
        }
    }

    /// Whether entry `a` wins its match against `b`.
    #[inline(always)]
    fn beats(&self, a: Entry, b: Entry) -> bool {
        if a.0 != b.0 {
            return a.0 < b.0;
        }
        if a.1 != b.1 {
            return a.1 < b.1;
        }
        if a.2 != b.2 {
            return a.2 < b.2;
        }
        self.tie(a.3 as usize, b.3 as usize)
    }

    /// Equal prefixes (or an exhausted source): the full order.
    #[inline(never)]
    fn tie(&self, a: usize, b: usize) -> bool {
        match (self.part[a].get(self.pos[a]), self.part[b].get(self.pos[b])) {
            (Some(x), Some(y)) => self.order.cmp(x, y).then(a.cmp(&b)).is_lt(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => a < b,
        }
    }
}

/// A run's indexed items (see [`Head`]).
struct Window<'c> {
    run: RunReader<'c>,
    /// The run's place among the merge's inputs.
    id: u32,
    items: Vec<Head>,
    /// First item not yet written.
    next: usize,
    /// The run is exhausted.
    done: bool,
    /// Room for normalised keys, one per [`KEY_CHUNK`] heads.
    rooms: Vec<KeyRoom>,
    /// The heads of each piece indexed in parallel.
    pieces: Vec<Vec<Head>>,
    /// The mean length of the lines indexed last time.
    avg_line: Option<usize>,
    /// The run is known to be in order (else each window is checked).
    sorted: bool,
}

impl Window<'_> {
    /// Indexes the items after the first that lie wholly inside the
    /// current block, at most `cap` − 1 of them in one piece, or, for lines
    /// once their length is known, about `cap` lines cut into pieces at
    /// line ends that all threads index at once (the pieces stop at the
    /// first one that meets its share of 2·`cap` lines).
    fn index_rest(&mut self, order: &Order, cap: usize, pool: &rayon::ThreadPool) {
        let parts = pool.current_num_threads() * 2;
        let parallel = parts > 1 && cap >= 1024;
        let ends = self.run.ends;
        match (ends.fixed, self.avg_line) {
            // Under -z the zero padding of short keys holds the
            // terminator byte: most guesses would be wrong.
            (None, Some(avg)) if parallel && ends.keyed && ends.codec.terminator() != 0 => {
                self.index_keyed(order, (cap - 1) * (avg + KEY_BYTES), 2 * cap / parts, parts, pool);
            }
            (None, Some(avg)) if parallel && !ends.keyed && ends.eol.is_some() => {
                match self.run.line_pieces((cap - 1) * avg, parts) {
                    pieces if pieces.len() >= 2 => {
                        self.index_lines(order, &pieces, 2 * cap / pieces.len(), pool)
                    }
                    _ => self.index_in_turn(order, cap - 1),
                }
            }
            _ => self.index_in_turn(order, cap - 1),
        }
        if ends.fixed.is_none() && self.items.len() > 1 {
            let bytes: usize = self.items[1..].iter().map(|h| h.len).sum();
            self.avg_line = Some(bytes.div_ceil(self.items.len() - 1).max(1));
        }
    }

    /// Indexes the items after the first that lie wholly inside the
    /// current block, at most `max`, one after the other on this thread.
    fn index_in_turn(&mut self, order: &Order, max: usize) {
        let (id, items) = (self.id, &mut self.items);
        if self.run.ends.keyed {
            self.run.whole_items(max, |item| items.push(order.keyed_head(item, id)));
        } else {
            self.run.whole_items(max, |item| items.push(order.head(item, id)));
        }
    }

    /// Indexes the lines of `pieces` (boundaries at line ends) on all
    /// threads, at most `share` per piece; stops after the first piece that
    /// meets its share.
    fn index_lines(&mut self, order: &Order, pieces: &[usize], share: usize, pool: &rayon::ThreadPool) {
        let id = self.id;
        if self.pieces.len() < pieces.len() {
            self.pieces.resize_with(pieces.len(), Vec::new);
        }
        let block = &self.run.src.buf.bytes()[..self.run.src.end];
        let eol = self.run.ends.eol.expect("pieces are cut at line ends");
        let indexed = &mut self.pieces[..pieces.len()];
        pool.install(|| {
            indexed.par_iter_mut().zip(pieces.par_windows(2)).for_each(|(heads, w)| {
                heads.clear();
                lines_in(&block[..w[1]], w[0], eol, share, |line| heads.push(order.head(line, id)));
            })
        });
        let mut pos = pieces[0];
        for (heads, w) in indexed.iter().zip(pieces.windows(2)) {
            self.items.extend_from_slice(heads);
            if let Some(h) = heads.last() {
                pos = h.ptr as usize - block.as_ptr() as usize + h.len;
            }
            if pos != w[1] {
                break; // this piece met its share: the rest waits
            }
        }
        self.run.src.pos = pos;
    }

    /// Indexes the keyed items of about the next `bytes` bytes of the
    /// current block on all threads: the bytes are cut into `parts` equal
    /// pieces, and each piece's items are found from a guess of where its
    /// first one starts (just after the first terminator byte at or after
    /// the cut), at most `share` per piece. A keyed item may hold the
    /// terminator byte in its key, so the guess can be wrong: the pieces
    /// are joined in order, and a piece whose guess is not where the
    /// previous piece's items end is indexed again from there (on this
    /// thread). Stops after a piece that meets its share or reaches an
    /// item that does not lie wholly inside the block. (Item after item on
    /// one thread, indexing keyed runs had been 30 % of a `-t, -k3,3n`
    /// merge's time, with the other core idle.)
    fn index_keyed(
        &mut self,
        order: &Order,
        bytes: usize,
        share: usize,
        parts: usize,
        pool: &rayon::ThreadPool,
    ) {
        let (id, ends) = (self.id, self.run.ends);
        let eol = ends.codec.terminator();
        let src = &self.run.src;
        let start = src.pos;
        let block = &src.buf.bytes()[..src.end];
        let limit = (start + bytes).min(block.len());
        let cuts: Vec<usize> = (0..=parts).map(|k| start + (limit - start) * k / parts).collect();
        if self.pieces.len() < parts {
            self.pieces.resize_with(parts, Vec::new);
        }
        let indexed = &mut self.pieces[..parts];
        // Each piece's guessed start and where its items end.
        let mut spans = vec![(0, 0); parts];
        pool.install(|| {
            indexed.par_iter_mut().zip(spans.par_iter_mut()).enumerate().for_each(|(k, (heads, span))| {
                heads.clear();
                // Just after a terminator byte at or after the cut's
                // previous byte: the cut itself when an item ends there.
                let c = cuts[k].saturating_sub(1);
                let from = match k {
                    0 => start,
                    _ => memchr::memchr(eol, &block[c..]).map_or(block.len(), |p| c + p + 1),
                };
                let to = keyed_items(block, from, cuts[k + 1], share, ends, |item| {
                    heads.push(order.keyed_head(item, id))
                });
                *span = (from, to);
            })
        });
        let mut pos = start;
        for (k, (heads, &(from, to))) in indexed.iter().zip(&spans).enumerate() {
            pos = if from == pos {
                self.items.extend_from_slice(heads);
                to
            } else {
                let items = &mut self.items;
                keyed_items(block, pos, cuts[k + 1], share, ends, |item| {
                    items.push(order.keyed_head(item, id))
                })
            };
            if pos < cuts[k + 1] {
                break; // the piece met its share, or the block ends: the rest waits
            }
        }
        self.run.src.pos = pos;
    }

    /// Indexes the run's next items: the next one (gathered into the carry
    /// buffer when it straddles two blocks), then up to `cap` − 1 more that
    /// lie wholly inside the current block; normalises their keys (lines
    /// with GNU keys) in parallel on `pool`. Recycles the bytes the
    /// previous items pointed to.
    fn fill(&mut self, order: &Order, cap: usize, pool: &rayon::ThreadPool) -> Result<()> {
        self.items.clear();
        self.next = 0;
        let keyed = self.run.ends.keyed;
        let Some(first) = self.run.next_item()? else {
            self.done = true;
            return Ok(());
        };
        self.items.push(if keyed { order.keyed_head(first, self.id) } else { order.head(first, self.id) });
        self.index_rest(order, cap, pool);
        if order.normalised && !keyed {
            let chunks = self.items.len().div_ceil(KEY_CHUNK);
            if self.rooms.len() < chunks {
                self.rooms.resize_with(chunks, KeyRoom::default);
            }
            let rooms = &mut self.rooms[..chunks];
            if chunks == 1 {
                order.normalise(&mut self.items, &mut rooms[0]);
            } else {
                pool.install(|| {
                    self.items
                        .par_chunks_mut(KEY_CHUNK)
                        .zip(rooms.par_iter_mut())
                        .for_each(|(heads, room)| order.normalise(heads, room))
                });
            }
        }
        // A run out of order (`sort -m` of a file that is not sorted): the
        // window ends before the descent, so each window is sorted and
        // every round emits something; the rest comes next fill. (Only the
        // first item can lie in the carry buffer.)
        if self.sorted {
            return Ok(());
        }
        if let Some(i) = (1..self.items.len()).find(|&i| order.before(&self.items[i], &self.items[i - 1])) {
            let block = self.run.src.buf.bytes().as_ptr() as usize;
            self.run.src.pos = self.items[i].ptr as usize - block;
            self.items.truncate(i);
        }
        Ok(())
    }
}

/// Calls `f` on each of the first `max` whole lines (each with its
/// terminator `eol`) of `text` from `from`; returns where the last one ends
/// (`from` when there is none).
#[inline]
fn lines_in<'a>(text: &'a [u8], from: usize, eol: u8, max: usize, mut f: impl FnMut(&'a [u8])) -> usize {
    let mut at = from;
    for p in line_ends(&text[from..], eol).take(max) {
        let stop = from + p + 1;
        f(&text[at..stop]);
        at = stop;
    }
    at
}

/// Calls `f` on each keyed item of `block` from `from` (an item's start)
/// that starts before `until` and lies wholly inside, at most `max` of
/// them; returns where the last one ends (`from` when there is none).
#[inline]
fn keyed_items<'a>(
    block: &'a [u8],
    from: usize,
    until: usize,
    max: usize,
    ends: Ends<'_>,
    mut f: impl FnMut(&'a [u8]),
) -> usize {
    let mut at = from;
    for _ in 0..max {
        if at >= until {
            break;
        }
        // The block came from the disk by DMA and is not in the cache:
        // fetched a few items ahead (index 0.88-1.0 s of a 1 GiB `-t,
        // -k3,3n` merge without, 0.76-0.78 s with).
        if let Some(b) = block.get(at + 384) {
            crate::radix::prefetch(b);
        }
        let Some(len) = ends.item_len(&block[at..]) else { break };
        f(&block[at..at + len]);
        at += len;
    }
    at
}

/// Where the items of a run end, as its codec says.
#[derive(Clone, Copy)]
struct Ends<'c> {
    codec: &'c dyn Codec,
    /// The size of every item; `None`: terminated items.
    fixed: Option<usize>,
    /// The terminator, when each of its bytes ends an item (lines);
    /// `None`: the codec parses where items end.
    eol: Option<u8>,
    /// Each line comes after its key ([`KEY_BYTES`] bytes): an item is the
    /// key, the line and its terminator.
    keyed: bool,
}

impl<'c> Ends<'c> {
    fn new(codec: &'c dyn Codec, keyed: bool) -> Self {
        let eol = codec.ends_at_terminators().then(|| codec.terminator());
        Ends { codec, fixed: codec.fixed(), eol, keyed }
    }

    /// The length of the item at the start of `avail` if it lies wholly
    /// inside (a keyed item's terminator is looked for after its key,
    /// which may hold its byte).
    #[inline]
    fn item_len(&self, avail: &[u8]) -> Option<usize> {
        if let Some(size) = self.fixed {
            return (avail.len() >= size).then_some(size);
        }
        let key = if self.keyed { KEY_BYTES } else { 0 };
        let line = avail.get(key..)?;
        Some(key + self.line_len(line)?)
    }

    /// The length of the line (a terminated item without a key) at the
    /// start of `avail` if it lies wholly inside.
    #[inline]
    fn line_len(&self, avail: &[u8]) -> Option<usize> {
        match self.eol {
            Some(eol) => Some(first_end(avail, eol)? + 1),
            None => self.codec.item_len(avail),
        }
    }
}

/// Reads records or lines of one run from its read-ahead blocks.
struct RunReader<'c> {
    src: BlockReader,
    /// Where its items end.
    ends: Ends<'c>,
    /// An item that straddles two blocks, copied whole.
    carry: Vec<u8>,
}

impl RunReader<'_> {
    /// The length of the item at the start of `avail` if it lies wholly
    /// inside.
    #[inline]
    fn item_len(&self, avail: &[u8]) -> Option<usize> {
        self.ends.item_len(avail)
    }

    /// The next item if it lies wholly inside the current block.
    #[inline]
    fn whole_item(&mut self) -> Option<&[u8]> {
        let len = self.item_len(&self.src.buf.bytes()[self.src.pos..self.src.end])?;
        let s = &mut self.src;
        let at = s.pos;
        s.pos += len;
        Some(&s.buf.bytes()[at..at + len])
    }

    /// Calls `f` on each of the next items, at most `max`, that lie wholly
    /// inside the current block.
    #[inline]
    fn whole_items<'a>(&'a mut self, max: usize, mut f: impl FnMut(&'a [u8])) {
        let s = &mut self.src;
        let (start, end) = (s.pos, s.end);
        let block = &s.buf.bytes()[..end];
        let mut at = start;
        match (self.ends.fixed, self.ends.eol) {
            (Some(size), _) => {
                let n = ((end - start) / size).min(max);
                for i in 0..n {
                    f(&block[start + i * size..start + (i + 1) * size]);
                }
                at += n * size;
            }
            (None, Some(eol)) if !self.ends.keyed => at = lines_in(block, start, eol, max, f),
            _ => at = keyed_items(block, start, end, max, self.ends, f),
        }
        s.pos = at;
    }

    /// Boundaries of `parts` pieces of whole lines of the current block
    /// from the next unread byte, together about `bytes` long (less at the
    /// block's end), each cut just after a line's terminator: piece k is
    /// `[b[k], b[k + 1])`. Empty when the block holds no whole line there.
    fn line_pieces(&self, bytes: usize, parts: usize) -> Vec<usize> {
        let s = &self.src;
        let block = &s.buf.bytes()[..s.end];
        let limit = (s.pos + bytes).min(s.end);
        let eol = self.ends.eol.expect("lines end at each terminator");
        let Some(last) = memchr::memrchr(eol, &block[s.pos..limit]) else { return Vec::new() };
        let end = s.pos + last + 1;
        let mut b = vec![s.pos];
        for k in 1..parts {
            let at = (s.pos + (end - s.pos) * k / parts).max(*b.last().expect("one"));
            let cut = memchr::memchr(eol, &block[at..end]).map_or(end, |p| at + p + 1);
            b.push(cut);
        }
        b.push(end);
        b.dedup();
        b
    }

    /// The next item (a line with its terminator: one is added to a last
    /// line without it), in the current block when it lies wholly inside, else
    /// in the carry buffer; `None` at the end of the run. May recycle the
    /// current block, and so invalidates the bytes of earlier items.
    fn next_item(&mut self) -> Result<Option<&[u8]>> {
        if self.src.pos == self.src.end && !self.src.refill()? {
            return Ok(None);
        }
        // A borrow-checker-friendly "if let Some(item) = self.whole_item()".
        if self.item_len(&self.src.buf.bytes()[self.src.pos..self.src.end]).is_some() {
            return Ok(self.whole_item());
        }
        // Straddles the block's end: gather it in the carry buffer.
        let s = &mut self.src;
        self.carry.clear();
        self.carry.extend_from_slice(&s.buf.bytes()[s.pos..s.end]);
        s.pos = s.end;
        loop {
            if !s.refill()? {
                if let Some(element_size) = self.ends.fixed {
                    let size = self.carry.len() as u64;
                    return Err(Error::new(ErrorKind::BadSize { size, element_size }, s.path()));
                }
                // Runs end with the terminator; a tail without one (a
                // file given to `-m`) is still a line, unless it ends inside
                // an item (a CSV record's open quote).
                let codec = self.ends.codec;
                if self.ends.eol.is_none() && !self.ends.keyed {
                    let mut state = 0;
                    codec.scan_ends(&self.carry, &mut state, &mut |_| true);
                    if codec.unended(state).is_some() {
                        InputEnds::check_file(codec, s.path())?;
                    }
                }
                self.carry.push(codec.terminator());
                return Ok(Some(&self.carry));
            }
            let avail = &s.buf.bytes()[s.pos..s.end];
            // A keyed line comes after its key: the key's bytes still
            // missing are taken whole first.
            let key = if self.ends.keyed { KEY_BYTES } else { 0 };
            let key_left = key.saturating_sub(self.carry.len());
            let codec = self.ends.codec;
            let rest = match avail.get(key_left..) {
                Some(line) if self.ends.fixed.is_none() => {
                    let head = &self.carry[key.min(self.carry.len())..];
                    codec.rest_len(head, line).map(|n| key_left + n)
                }
                Some(_) => codec.rest_len(&self.carry, avail),
                None => None,
            };
            let take = rest.unwrap_or(avail.len());
            self.carry.extend_from_slice(&avail[..take]);
            s.pos += take;
            if rest.is_some() {
                return Ok(Some(&self.carry));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A run's lines one after another, as in a read-ahead block.
    fn block(lines: &[Vec<u8>]) -> Vec<u8> {
        lines.concat()
    }

    /// The heads of the lines of `block` (each ended by `\n`).
    fn heads(block: &[u8], order: &Order) -> Vec<Head> {
        let mut hs = Vec::new();
        lines_in(block, 0, b'\n', usize::MAX, |l| hs.push(order.head(l, 0)));
        hs
    }

    fn sorted_lines(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        for l in &mut v {
            l.retain(|&b| b != b'\n');
            l.push(b'\n');
        }
        v.sort_unstable();
        v
    }

    /// Collects what a merge writes.
    struct VecSink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl crate::byte_stream::BlockSink for VecSink {
        fn write(&mut self, bytes: &[u8]) -> Result<()> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(())
        }
        fn close(&mut self) -> Result<()> {
            Ok(())
        }
    }

    /// The merge finds items where the codec's parse says they end (a
    /// quoted newline is a byte of its item), in blocks that cut items
    /// anywhere, and merges runs of them like a sort.
    #[test]
    fn merges_items_whose_ends_only_a_parse_finds() {
        use emsort_io::{StreamConfig, StreamKind};
        use rand::{Rng, SeedableRng};
        let codec = crate::codec::Quoted;
        let dir = tempfile::tempdir().unwrap();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let raw = |i: &Vec<u8>| i[..i.len() - 1].to_vec();
        for (block, items) in [(200, 300), (256 << 10, 20_000)] {
            let (mut all, mut inputs) = (Vec::new(), Vec::new());
            for r in 0..3 {
                let mut run: Vec<Vec<u8>> = (0..items)
                    .map(|_| {
                        let mut item: Vec<u8> =
                            (0..rng.random_range(0..12)).map(|_| rng.random_range(b'a'..b'd')).collect();
                        if rng.random_bool(0.3) {
                            let at = rng.random_range(0..=item.len());
                            item.splice(at..at, b"\"x\ny\n\"".iter().copied());
                        }
                        item.push(b'\n');
                        item
                    })
                    .collect();
                run.sort_by_key(raw);
                let path = dir.path().join(format!("run{r}"));
                std::fs::write(&path, run.concat()).unwrap();
                let cfg = StreamConfig::new(StreamKind::Buffered).block_size(block);
                let stream = crate::byte_stream::ByteInput::open(&path, 1, &cfg).unwrap();
                inputs.push(crate::read_ahead::Input { stream, path, free_behind: false, skip: 0 });
                all.extend(run);
            }
            all.sort_by_key(raw);
            let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let kinds = [RunKind { sorted: true, keyed: false }; 3];
            std::thread::scope(|s| {
                let readers = crate::read_ahead::start(s, inputs, block).unwrap();
                let sink = Box::new(VecSink(got.clone()));
                let mut out = WriteBehind::new(s, sink, block, dir.path()).unwrap();
                merge(readers, &kinds, block, &codec, &mut out, &pool, 2, &mut |_| Ok(())).unwrap();
                out.finish().unwrap();
            });
            assert!(*got.lock().unwrap() == all.concat(), "blocks of {block} bytes");
        }
    }

    /// `sort -m` of runs out of order merges as GNU sort does, head by
    /// head (the smallest head next, ties to the earlier run), also where
    /// output blocks cut rounds short and a run's descent moves the bound
    /// back.
    #[test]
    fn runs_out_of_order_merge_head_by_head() {
        use emsort_io::{StreamConfig, StreamKind};
        use rand::{Rng, SeedableRng};
        let codec = crate::codec::of(crate::Format::Lines, false, b'\n', None);
        let dir = tempfile::tempdir().unwrap();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        for (block, items, seed) in [(128, 400, 1), (512, 3000, 2), (4096, 6000, 3)] {
            let mut inputs = Vec::new();
            let mut runs: Vec<Vec<Vec<u8>>> = Vec::new();
            for r in 0..4 {
                // Sorted stretches of random lengths, each starting anew.
                let mut run: Vec<Vec<u8>> = Vec::new();
                while run.len() < items {
                    let n = rng.random_range(1..60usize).min(items - run.len());
                    let mut part: Vec<Vec<u8>> = (0..n)
                        .map(|_| {
                            let mut l: Vec<u8> =
                                (0..rng.random_range(0..6)).map(|_| rng.random_range(b'a'..b'e')).collect();
                            l.push(b'\n');
                            l
                        })
                        .collect();
                    part.sort();
                    run.extend(part);
                }
                let path = dir.path().join(format!("run{seed}-{r}"));
                std::fs::write(&path, run.concat()).unwrap();
                let cfg = StreamConfig::new(StreamKind::Buffered).block_size(block);
                let stream = crate::byte_stream::ByteInput::open(&path, 1, &cfg).unwrap();
                inputs.push(crate::read_ahead::Input { stream, path, free_behind: false, skip: 0 });
                runs.push(run);
            }
            let mut want = Vec::new();
            let mut at = vec![0; runs.len()];
            while let Some(r) =
                (0..runs.len()).filter(|&r| at[r] < runs[r].len()).min_by_key(|&r| (&runs[r][at[r]], r))
            {
                want.extend_from_slice(&runs[r][at[r]]);
                at[r] += 1;
            }
            let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let kinds = [RunKind { sorted: false, keyed: false }; 4];
            std::thread::scope(|s| {
                let readers = crate::read_ahead::start(s, inputs, block).unwrap();
                let sink = Box::new(VecSink(got.clone()));
                let mut out = WriteBehind::new(s, sink, block, dir.path()).unwrap();
                merge(readers, &kinds, block, &*codec, &mut out, &pool, 2, &mut |_| Ok(())).unwrap();
                out.finish().unwrap();
            });
            assert!(*got.lock().unwrap() == want, "blocks of {block} bytes");
        }
    }

    proptest! {
        /// The prefix-keyed tree merges like a sort, forwards and reversed,
        /// with lines that share their 8-byte prefixes (ties go to the full
        /// order) and with exhausted sources.
        #[test]
        fn head_tree_merges_like_a_sort(runs in prop::collection::vec(
                prop::collection::vec(prop::collection::vec(b'a'..b'c', 0..30), 0..40), 0..7),
                reverse: bool) {
            let codec = crate::codec::of(crate::Format::Lines, reverse, b'\n', None);
            let order = Order::new(&*codec);
            let runs: Vec<Vec<Vec<u8>>> = runs
                .into_iter()
                .map(|r| {
                    let mut r = sorted_lines(r);
                    if reverse {
                        r.reverse();
                    }
                    r
                })
                .collect();
            let blocks: Vec<Vec<u8>> = runs.iter().map(|r| block(r)).collect();
            let hs: Vec<Vec<Head>> = blocks.iter().map(|b| heads(b, &order)).collect();
            let part: Vec<&[Head]> = hs.iter().map(|h| h.as_slice()).collect();
            let mut all: Vec<Vec<u8>> = runs.concat();
            all.sort_unstable();
            if reverse {
                all.reverse();
            }
            let want: Vec<u8> = all.concat();
            let mut out = vec![0u8; want.len()];
            prop_assert_eq!(merge_part(&part, &mut out, &order, false), want.len());
            prop_assert_eq!(out, want);
        }

        /// Heads of normalised keys (`-t, -k1,1`, text or numbers, with
        /// `-r`, `-s`) merge like GNU's comparator, whose ties between
        /// equal keys of more than 8 bytes the keys' extensions decide
        /// ([`Order::normalise`]), and keys that share their first 16 or
        /// 24 bytes (`third`, then the rest of the keys).
        #[test]
        fn normalised_heads_merge_like_the_comparator(runs in prop::collection::vec(
                prop::collection::vec((any::<bool>(), prop::collection::vec(b'a'..b'c', 0..12),
                                       prop::collection::vec(b'0'..b'2', 0..20)), 0..40), 0..6),
                numeric: bool, reverse: bool, stable: bool) {
            use crate::keys::{Key, LineOrder, OrderOptions};
            let mut key = Key::parse("1,1").unwrap();
            key.numeric = numeric;
            let mut o = OrderOptions { keys: vec![key], tab: Some(b','), stable, ..Default::default() };
            o.global.reverse = reverse;
            let lo = LineOrder::new(o).unwrap();
            let codec = crate::codec::of(crate::Format::Lines, reverse, b'\n', Some(&lo));
            let order = Order::new(&*codec);
            // Half the keys share their first 22 bytes (and more): keys
            // of 24 bytes or more compared past their thirds.
            let line = |(long, k, v): &(bool, Vec<u8>, Vec<u8>)| {
                let k = [if *long { &b"bbbbbbbbbbbbbbbbbbbbbb"[..] } else { b"" }, k].concat();
                let k = if numeric { k.iter().map(|&b| b - b'a' + b'0').collect() } else { k };
                [k, b",".to_vec(), v.clone(), b"\n".to_vec()].concat()
            };
            let cmp = |a: &Vec<u8>, b: &Vec<u8>| lo.compare(&a[..a.len() - 1], &b[..b.len() - 1]);
            let runs: Vec<Vec<Vec<u8>>> = runs
                .iter()
                .map(|r| {
                    let mut r: Vec<Vec<u8>> = r.iter().map(line).collect();
                    r.sort_by(cmp);
                    r
                })
                .collect();
            let blocks: Vec<Vec<u8>> = runs.iter().map(|r| block(r)).collect();
            let mut rooms: Vec<KeyRoom> = Vec::new();
            let hs: Vec<Vec<Head>> = blocks
                .iter()
                .enumerate()
                .map(|(n, b)| {
                    let mut hs: Vec<Head> = heads(b, &order).into_iter().map(|h| Head { run: n as u32, ..h }).collect();
                    for chunk in hs.chunks_mut(KEY_CHUNK) {
                        rooms.push(KeyRoom::default());
                        order.normalise(chunk, rooms.last_mut().unwrap());
                    }
                    hs
                })
                .collect();
            let part: Vec<&[Head]> = hs.iter().map(|h| h.as_slice()).collect();
            // Equal lines keep the runs' order (a stable sort of the runs
            // one after another).
            let mut all: Vec<Vec<u8>> = runs.concat();
            all.sort_by(cmp);
            let want: Vec<u8> = all.concat();
            let mut out = vec![0u8; want.len()];
            prop_assert_eq!(merge_part(&part, &mut out, &order, false), want.len());
            prop_assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&want));
        }

        /// Cutting keeps a prefix of the merged order within the cap, and
        /// splitting gives parts whose merged outputs concatenate to it.
        #[test]
        fn cut_and_split_keep_the_order(runs in prop::collection::vec(
                prop::collection::vec(prop::collection::vec(b'a'..b'e', 0..4), 0..60), 1..6),
                cap in 1usize..400, parts in 1usize..4) {
            let codec = crate::codec::of(crate::Format::Lines, false, b'\n', None);
            let order = Order::new(&*codec);
            let runs: Vec<Vec<Vec<u8>>> = runs.into_iter().map(sorted_lines).collect();
            let blocks: Vec<Vec<u8>> = runs.iter().map(|r| block(r)).collect();
            let hs: Vec<Vec<Head>> = blocks.iter().map(|b| heads(b, &order)).collect();
            let live: Vec<&[Head]> = hs.iter().map(|h| h.as_slice()).collect();
            let mut counts: Vec<usize> = live.iter().map(|s| s.len()).collect();
            let bytes = cut(&live, &mut counts, cap, &order);
            let n: usize = counts.iter().sum();
            prop_assert!(bytes <= cap || n <= 1);
            let mut all: Vec<Vec<u8>> = runs.concat();
            all.sort_unstable();
            let bounds = split(&live, &counts, if n == 0 { 1 } else { parts }, &order);
            let mut out = vec![0u8; bytes];
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            merge_parts(&live, &bounds, &mut out, &order, &pool, false);
            let want: Vec<u8> = all[..n].concat();
            prop_assert_eq!(out, want);
        }
    }
}
