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
//! - In a collating locale a normalised key is a `strxfrm` of the whole
//!   text (module `keys::locale`, which keeps short texts' forms per
//!   thread), however little of it a window takes: each group of equal
//!   prefixes is sorted bytewise, each distinct line's key written once,
//!   the distinct lines sorted by them, and ties (`strcoll`) compared once
//!   per distinct line ([`collated_ties`]); a merge gives a head equal to
//!   the one before it that one's key ([`crate::codec::Codec::costly_keys`]).

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
    /// A group sorted whole by keys written once ([`lines`]): each
    /// distinct line's key's place in `key`, and where its equal lines
    /// are in the group (first, count).
    group: Vec<(u32, u32, u32, u32)>,
    /// A copy of the group's entries.
    entries: Vec<Entry>,
}

/// Key bytes a group may take to be sorted whole by keys written once
/// (see [`lines`]): a thread's caches' worth, so that the keys of a
/// chunk's groups are never all held at once.
const WHOLE_KEYS: usize = 256 << 10;

/// The line of `text` that entry `e` indexes (without its terminator).
#[inline]
fn line_of<'t>(text: &'t [u8], e: &Entry) -> &'t [u8] {
    &text[e.1 as usize..(e.1 + e.2) as usize]
}

/// Sorts `g` (entries of lines of `text`) bytewise, then by input
/// position: equal lines together, in input order.
fn bytewise(g: &mut [Entry], text: &[u8]) {
    let line = |e: &Entry| line_of(text, e);
    // By the lines alone, then each set of equal lines by position: many
    // lines are equal (words repeat), and pattern-defeating quicksort
    // takes a set of equal elements in linear time, which a comparison
    // that went on to the position would not let it.
    if g.len() < 2048 {
        g.sort_unstable_by(|a, b| line(a).cmp(line(b)));
    } else {
        // By their first 8 bytes first (the prefixes are the group's key's,
        // all equal, and no longer needed).
        g.iter_mut().for_each(|e| e.0 = prefix(line(e)));
        radix::sort_index(g, false, |a, b| line(a).cmp(line(b)));
    }
    for same in g.chunk_by_mut(|a, b| a.2 == b.2 && line(a) == line(b)) {
        same.sort_unstable_by_key(|e| e.1);
    }
}

/// Sorts a group of lines whose normalised keys in a collating locale are
/// equal by the rest of the order ([`LineOrder::compare_equal_forms`],
/// `strcoll` mostly), then input position, comparing each distinct line
/// once: equal lines (which compare equal, so keep their input order)
/// are put together bytewise, the distinct ones sorted, and those the
/// order finds equal interleaved again by position.
fn collated_ties(g: &mut [Entry], text: &[u8], lo: &LineOrder) {
    let line = |e: &Entry| line_of(text, e);
    bytewise(g, text);
    let mut classes: Vec<&[Entry]> = g.chunk_by(|a, b| line(a) == line(b)).collect();
    if classes.len() == g.len() {
        drop(classes);
        g.sort_unstable_by(|a, b| lo.compare_equal_forms(line(a), line(b)).then(a.1.cmp(&b.1)));
        return;
    }
    classes
        .sort_unstable_by(|a, b| lo.compare_equal_forms(line(&a[0]), line(&b[0])).then(a[0].1.cmp(&b[0].1)));
    let mut out: Vec<Entry> = Vec::with_capacity(g.len());
    for same in classes.chunk_by(|a, b| lo.compare_equal_forms(line(&a[0]), line(&b[0])).is_eq()) {
        let from = out.len();
        same.iter().for_each(|c| out.extend_from_slice(c));
        if same.len() > 1 {
            out[from..].sort_unstable_by_key(|e| e.1);
        }
    }
    g.copy_from_slice(&out);
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
    let line = |e: &Entry| line_of(text, e);
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
    let last_resort_only = lo.ties_bytewise();
    let ties = |g: &mut [Entry]| {
        // The group's key (its prefix: keys of at most 8 bytes end in the
        // first window), put back after for a run that carries it: the
        // sorts below may use the prefixes.
        let key = g[0].0;
        if last_resort_only {
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
        } else {
            if lo.collates() && g.len() > 2 {
                // Sorts by the lines' own first 8 bytes on the way.
                collated_ties(g, text, lo);
            } else {
                g.sort_unstable_by(|a, b| lo.compare_equal_forms(line(a), line(b)).then(a.1.cmp(&b.1)));
            }
            // Equal normalised keys: equal lines unless a -V/-R key tells
            // them apart.
            mark_repeats(g, &|a, b| lo.complete() || lo.compare_equal_forms(a, b).is_eq());
        }
        if keyed && !long {
            g.iter_mut().for_each(|e| e.0 = key);
        }
    };
    let deep = |g: &mut [Entry]| {
        g.sort_unstable_by(|a, b| lo.compare(line(a), line(b)).then(a.1.cmp(&b.1)));
        mark_repeats(g, &|a, b| lo.same(a, b));
    };
    // In a collating locale each window would cost a strxfrm of the whole
    // key (`Locale::text_form`), up to one per window a line's group
    // reaches: a group has its lines sorted bytewise, each distinct line's
    // key written once (while they take at most WHOLE_KEYS bytes), the
    // distinct lines sorted by them, and each set of equal keys by `ties`
    // (100 MB of words in en_US.UTF-8 had spent 28-40 % of its time in
    // strxfrm; words repeat).
    let whole = |g: &mut [Entry], s: &mut KeyRoom| {
        if !(long && lo.collates()) {
            return false;
        }
        bytewise(g, text);
        let KeyRoom { key, scratch, group, entries } = s;
        key.clear();
        group.clear();
        let mut at = 0;
        for same in g.chunk_by(|a, b| line(a) == line(b)) {
            let from = key.len();
            lo.encode(line(&same[0]), key, scratch);
            if key.len() > WHOLE_KEYS {
                // Left to the windows (which sort the group again).
                return false;
            }
            group.push((from as u32, key.len() as u32, at as u32, same.len() as u32));
            at += same.len();
        }
        let bytes = |k: &(u32, u32, u32, u32)| &key[k.0 as usize..k.1 as usize];
        group.sort_unstable_by(|a, b| bytes(a).cmp(bytes(b)).then(a.2.cmp(&b.2)));
        entries.clear();
        entries.extend_from_slice(g);
        let mut to = 0;
        for same in group.chunk_by(|a, b| bytes(a) == bytes(b)) {
            let from = to;
            for k in same {
                let n = k.3 as usize;
                g[to..to + n].copy_from_slice(&entries[k.2 as usize..k.2 as usize + n]);
                to += n;
            }
            if to - from > 1 {
                ties(&mut g[from..to]);
            }
        }
        true
    };
    radix::sort_index_deep(&mut index, window, whole, ties, deep, |e| text[e.1 as usize..].as_ptr());
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

#[cfg(test)]
mod tests {
    use crate::codec::sort_in_memory;
    use crate::format::Format;
    use crate::keys::{Key, LineOrder, Locale, OrderOptions};
    use rand::{Rng, SeedableRng};

    /// Lines of a collating locale's chunk sort, against the comparator
    /// (itself checked against GNU sort): words that share a long prefix
    /// (groups of equal 8-byte forms larger than the radix's small groups,
    /// and keys beyond what a group sorted whole may hold), repeated many
    /// times, equal but for case or accents, with and without keys, `-u`,
    /// `-s`, `-r`.
    #[test]
    fn collated_groups_sort_as_the_comparator() {
        let Some(l) = Locale::named("en_US.UTF-8").expect("en_US.UTF-8 is generated (see .ci/run)") else {
            panic!("en_US.UTF-8 collates")
        };
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(41);
        let letters = ["a", "A", "á", "b", "B", "-", " ", "é", "e", "0"];
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for i in 0..40_000 {
            // A few hot words, then many distinct long ones.
            let n = if i % 3 == 0 { rng.random_range(0..4) } else { rng.random_range(4..40) };
            let tail: String = (0..n).map(|_| letters[rng.random_range(0..letters.len())]).collect();
            let head = if i % 2 == 0 { "prefixedword" } else { "Préfixedword" };
            lines.push(format!("{head}{tail},{}", rng.random_range(0..5)).into_bytes());
        }
        let text: Vec<u8> = lines.iter().flat_map(|l| [l.as_slice(), b"\n"].concat()).collect();
        for (keys, flags) in [
            (vec![], ""),
            (vec![], "u"),
            (vec![], "r"),
            (vec!["1,1"], "s"),
            (vec!["1,1"], "u"),
            (vec!["2,2n", "1,1"], ""),
        ] {
            let mut o = OrderOptions { locale: Some(l.clone()), tab: Some(b','), ..OrderOptions::default() };
            o.keys = keys.iter().map(|k| Key::parse(k).unwrap()).collect();
            if flags.contains('r') {
                o.global.set_global('r');
            }
            o.unique = flags.contains('u');
            o.stable = flags.contains('s');
            let lo = LineOrder::new(o).unwrap();
            let mut want: Vec<&[u8]> = lines.iter().map(|l| l.as_slice()).collect();
            want.sort_by(|a, b| lo.compare(a, b));
            if lo.unique() {
                want.dedup_by(|b, a| lo.same(a, b));
            }
            let want: Vec<u8> = want.iter().flat_map(|l| [*l, b"\n"].concat()).collect();
            let got = sort_in_memory(Format::Lines, false, b'\n', Some(&lo), &text).unwrap();
            assert!(got == want, "{keys:?} {flags}");
        }
    }
}
