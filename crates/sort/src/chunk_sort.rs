//! Sorting a chunk in memory, one way per family of items: what
//! [`Codec::sort_chunk`](crate::codec::Codec::sort_chunk) runs for run
//! formation, and [`sort_in_memory`](crate::codec::sort_in_memory) for
//! buffers (the Python bindings). All sorts run on the current rayon pool.
//!
//! - Numbers in place by their normalised key ([`numbers`]: the SIMD
//!   quicksort or the radix sort of module `radix`).
//! - Records through an index of (key prefix, record number), radix-sorted
//!   by prefix, then each group of equal prefixes by the whole key and the
//!   record number: records with equal keys keep their order ([`records`]).
//! - Lines through the reader's index of (key prefix, offset, length)
//!   ([`lines`]): by their first 8 bytes, then each group by the whole
//!   line; under GNU keys by their normalised keys ([`crate::keys`]), 8
//!   bytes at a time (each group of equal windows sorted by the next 8,
//!   computed again with the group's lines prefetched) until the keys end,
//!   then by the rest of GNU's comparison (`-V`/`-R` keys, the last resort)
//!   and the input position. `-u` keeps the first of each group of equal
//!   lines. When every key of the chunk fits in 8 bytes (`-k3,3n` on
//!   amounts, `-k1,1n` on ids) the index holds the whole keys, and a run
//!   may carry each line's key before it ([`Order::KeyedLines`]): the
//!   merge then parses no line again (a keyed `-t, -k3,3n` sort of 1 GiB
//!   used a quarter less CPU).

use crate::key::{prefix, NumKey};
use crate::keys::{LineOrder, Scratch};
use crate::radix;
use crate::run_store::{Order, KEY_BYTES};

/// An entry of a lines chunk's index: (key prefix, offset, length without
/// the terminator).
pub(crate) type Entry = (u64, u32, u32);

/// Room to write normalised keys in, per thread: one line's here, a
/// window's heads' in the merge.
#[derive(Default)]
pub(crate) struct KeyRoom {
    /// The keys' bytes.
    pub key: Vec<u8>,
    pub scratch: Scratch,
}

impl KeyRoom {
    /// Writes `line`'s normalised key by `lo` into `self.key`.
    #[inline]
    pub fn encode(&mut self, lo: &LineOrder, line: &[u8]) {
        self.key.clear();
        lo.encode(line, &mut self.key, &mut self.scratch);
    }

    /// The index prefix of `line` (its normalised key's by `keys` when they
    /// are GNU keys, else its own first 8 bytes), and whether that key is
    /// longer than a prefix.
    #[inline]
    pub fn line_prefix(&mut self, keys: Option<&LineOrder>, line: &[u8]) -> (u64, bool) {
        match keys {
            Some(lo) if !lo.is_plain() => {
                self.encode(lo, line);
                (prefix(&self.key), self.key.len() > KEY_BYTES)
            }
            _ => (prefix(line), false),
        }
    }
}

/// Sorts numbers of `T` held in `data` (aligned for `T`) in place.
pub(crate) fn numbers<T: NumKey>(data: &mut [u8], rev: bool) {
    radix::sort_numbers(bytemuck::cast_slice_mut::<u8, T>(data), rev);
}

/// The order of the records of `size` bytes in `data`, by their key
/// bytes `key`, descending when `rev`; equal keys keep their order.
pub(crate) fn records(data: &[u8], size: usize, key: std::ops::Range<usize>, rev: bool) -> Order {
    use rayon::prelude::*;
    let field = |i: u32| &data[i as usize * size + key.start..i as usize * size + key.end];
    let mut index: Vec<(u64, u32)> = Vec::new();
    (0..(data.len() / size) as u32)
        .into_par_iter()
        .map(|i| (prefix(field(i)), i))
        .collect_into_vec(&mut index);
    // `sort_index` reverses the whole comparison under `rev`: the record
    // numbers are compared the other way round so that ties stay in order.
    radix::sort_index(&mut index, rev, |a, b| {
        field(a.1).cmp(field(b.1)).then(if rev { b.1.cmp(&a.1) } else { a.1.cmp(&b.1) })
    });
    Order::Records(index)
}

/// The order of the lines of `text` (each ended by its terminator), whose
/// index `entries` holds each line's prefix by [`KeyRoom::line_prefix`]:
/// bytewise (descending when `rev`) without GNU keys `keys`, else by them.
/// `long`: some key is longer than a prefix; `keyed`: the run may carry
/// the keys ([`Order::KeyedLines`]).
pub(crate) fn lines(
    text: &[u8],
    entries: Vec<Entry>,
    long: bool,
    keyed: bool,
    rev: bool,
    keys: Option<&LineOrder>,
) -> Order {
    let line = |e: &Entry| &text[e.1 as usize..(e.1 + e.2) as usize];
    let plain = |mut index: Vec<Entry>, rev: bool| {
        radix::sort_index(&mut index, rev, |a, b| line(a).cmp(line(b)));
        index
    };
    let Some(lo) = keys else {
        return Order::Lines(plain(entries, rev));
    };
    if lo.is_plain() {
        // Plain (`sort -u`): bytewise, then one line per group of equal
        // lines.
        let mut index = plain(entries, lo.reverse());
        if lo.unique() {
            index.dedup_by(|b, a| a.0 == b.0 && line(a) == line(b));
        }
        return Order::Lines(index);
    }
    // By the normalised keys, 8 bytes at a time (computed again for each
    // window a line's group reaches); lines with equal keys by the rest of
    // GNU's comparison, then by input position (for -s, -u). Without
    // `long`, no group of equal prefixes has a second window to sort by
    // (and its first line need not be encoded again to learn so), and the
    // run may carry the keys as the index holds them.
    let mut index = entries;
    let window = |e: &Entry, w: usize, s: &mut KeyRoom| {
        if !long {
            return None;
        }
        s.encode(lo, line(e));
        (s.key.len() > 8 * w).then(|| prefix(&s.key[8 * w..]))
    };
    // -u: the first of each group of equal lines, as GNU keeps; the others
    // are marked (a length no line has) and dropped after. Equal lines are
    // neighbours in a group of equal keys.
    const REPEAT: u32 = u32::MAX;
    let mark_repeats = |g: &mut [Entry], same: &dyn Fn(&[u8], &[u8]) -> bool| {
        if lo.unique() {
            // Backwards, so both lines compared are unmarked.
            for i in (1..g.len()).rev() {
                if same(line(&g[i - 1]), line(&g[i])) {
                    g[i].2 = REPEAT;
                }
            }
        }
    };
    // Equal keys that only the last resort tells apart (no -V/-R key, no
    // -s/-u): whole lines bytewise, by their first 8 bytes before the rest,
    // each line read once and fetched ahead (the group's lines lie all over
    // the chunk; `-t, -k3,3n` on a CSV puts half its lines in such groups).
    let last_resort_only = lo.complete() && !lo.keeps_input_order() && lo.bytewise_last_resort();
    let ties = |g: &mut [Entry]| {
        if last_resort_only {
            // The group's key (its prefix: keys of at most 8 bytes end in
            // the first window), put back after for a run that carries it.
            let key = g[0].0;
            for i in 0..g.len() {
                if let Some(ahead) = g.get(i + 8) {
                    radix::prefetch(text[ahead.1 as usize..].as_ptr());
                }
                let p = prefix(line(&g[i]));
                g[i].0 = if lo.reverse() { !p } else { p };
            }
            g.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0).then_with(|| lo.last_resort(line(a), line(b))).then(a.1.cmp(&b.1))
            });
            if keyed && !long {
                g.iter_mut().for_each(|e| e.0 = key);
            }
            return;
        }
        g.sort_unstable_by(|a, b| lo.compare_equal_forms(line(a), line(b)).then(a.1.cmp(&b.1)));
        // Equal normalised keys: equal lines unless a -V/-R key tells them
        // apart.
        mark_repeats(g, &|a, b| lo.complete() || lo.compare_equal_forms(a, b).is_eq());
    };
    let deep = |g: &mut [Entry]| {
        g.sort_unstable_by(|a, b| lo.compare(line(a), line(b)).then(a.1.cmp(&b.1)));
        mark_repeats(g, &|a, b| lo.same(a, b));
    };
    radix::sort_index_deep(&mut index, window, ties, deep, |e| text[e.1 as usize..].as_ptr());
    if lo.unique() {
        index.retain(|e| e.2 != REPEAT);
    }
    // Keys of at most 8 bytes are whole in the entries' prefixes (each
    // group's restored after its ties were sorted).
    if keyed && !long {
        Order::KeyedLines(index)
    } else {
        Order::Lines(index)
    }
}
