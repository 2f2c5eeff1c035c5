//! Merging numbers of every format with bitonic merge networks (Chhugani
//! et al., VLDB 2008; Inoue & Taura, VLDB 2015), written once over
//! [`crate::lanes::Lanes`] for AVX-512 (16 keys of 32 bits or 8 of 64 per
//! vector) and AVX2 (8 or 4); [`crate::simd::level`] chooses.
//!
//! A loser tree ([`crate::tree`]) plays one match per level for every
//! item, each match waiting for the one below it: about 30 cycles per u32 in
//! a 9-way merge on this project's machine, the merge's whole CPU time. A
//! bitonic network merges two sorted vectors of 16 keys in 10 min/max steps
//! that do not depend on the data, so two sorted slices merge at a few
//! cycles per item:
//!
//! ```text
//!   a = next 16 of A, b = next 16 of B (both ascending)
//!   b reversed → min(a, b), max(a, b): two bitonic halves, every key of
//!   the low one ≤ every key of the high one → 4 half-cleaner steps each
//!   (lanes 8, 4, 2, 1 apart) sort them → store the low 16; keep the high
//!   16 as `a`; load the next 16 from the slice whose next key is smaller.
//! ```
//!
//! k slices merge through a tree of such 2-way merges, one level at a time
//! (⌈log₂ k⌉ levels, an odd slice copied to the next level), between two
//! scratch buffers of the thread (each as long as the output: one round's
//! part, a fraction of a MiB that stays in the core's L2 cache). The tails
//! (fewer than 16 keys left in a slice) are merged one key at a time.
//!
//! (The figures above are AVX-512's u32; AVX2 merges 8 keys of 32 bits per
//! network in 6 steps, 4 of 64 bits in 3.)
//!
//! Items are merged as their normalised keys ([`crate::key`]): the first
//! level turns the items it loads into keys in registers (a
//! [`crate::lanes::Codec`]: an XOR for integers — the sign bit for i32 and
//! i64, all bits for descending order — the float transform for floats),
//! the levels between merge keys, and the last turns the keys it stores
//! back into items, so one kernel serves every format in both orders.
//! Keys are bijections of the items' bits: equal keys are equal items, so
//! the order of ties does not matter and every level writes the same
//! bytes. At [`Level::Scalar`] the caller keeps the loser tree.

use std::cell::RefCell;

use crate::key::NumKey;
use crate::simd::{level, Level};

thread_local! {
    /// The two scratch buffers of the levels of a merge on this thread (as
    /// u64, viewed as keys of either width).
    static SCRATCH: RefCell<[Vec<u64>; 2]> = const { RefCell::new([Vec::new(), Vec::new()]) };
}

/// Merges `slices` (each sorted by the normalised key of [`crate::key`],
/// descending when `rev`) into `out`, whose length is their total, with
/// the kernels of [`level`]. At [`Level::Scalar`] it still merges, one key
/// at a time: callers keep their loser tree there.
pub(crate) fn merge_into<T: NumKey>(slices: &[&[T]], out: &mut [T], rev: bool) {
    merge_into_at(level(), slices, out, rev)
}

/// [`merge_into`] with the kernels of `at` (at most
/// [`crate::simd::detected`]).
pub(crate) fn merge_into_at<T: NumKey>(at: Level, slices: &[&[T]], out: &mut [T], rev: bool) {
    assert!(at <= crate::simd::detected(), "the CPU has no {at}");
    debug_assert_eq!(out.len(), slices.iter().map(|s| s.len()).sum::<usize>());
    let flip = crate::key::bits_flip::<T>(rev);
    #[cfg(target_arch = "x86_64")]
    {
        use crate::lanes::{Avx2x4, Avx2x8, Avx512x16, Avx512x8};
        match (std::mem::size_of::<T>(), at) {
            (4, Level::Avx512) => return coded::<T, Avx512x16>(slices, out, flip),
            (4, Level::Avx2) => return coded::<T, Avx2x8>(slices, out, flip),
            (8, Level::Avx512) => return coded::<T, Avx512x8>(slices, out, flip),
            (8, Level::Avx2) => return coded::<T, Avx2x4>(slices, out, flip),
            _ => {}
        }
    }
    match std::mem::size_of::<T>() {
        4 => coded::<T, Scalar<u32>>(slices, out, flip),
        8 => coded::<T, Scalar<u64>>(slices, out, flip),
        w => unreachable!("numbers are 4 or 8 bytes wide, not {w}"),
    }
}

/// The merge of items of `T` as the keys of `M`, with the codec of `T`.
fn coded<T: NumKey, M: Merge2>(slices: &[&[T]], out: &mut [T], flip: u64) {
    let keys: Vec<&[M::K]> = slices.iter().map(|s| bytemuck::cast_slice(s)).collect();
    let out: &mut [M::K] = bytemuck::cast_slice_mut(out);
    let flip = flip ^ M::K::BIAS;
    if T::FLOAT {
        tree::<M, _>(&keys, out, Float(flip));
    } else {
        tree::<M, _>(&keys, out, Xor(flip));
    }
}

/// A 2-way merge of sorted slices of keys, the items of the inputs
/// becoming keys by codec `I`, the keys the output's items by `O`.
trait Merge2 {
    type K: Key;
    /// Merges `a` and `b` into `out` (their total length).
    fn merge2<I: Codec, O: Codec>(a: &[Self::K], b: &[Self::K], out: &mut [Self::K], i: I, o: O);
}

/// The scalar level: one key at a time.
struct Scalar<K>(std::marker::PhantomData<K>);

impl<K: Key> Merge2 for Scalar<K> {
    type K = K;
    fn merge2<I: Codec, O: Codec>(a: &[K], b: &[K], out: &mut [K], i: I, o: O) {
        merge2_scalar(a, i, b, i, out, o)
    }
}

/// Merges `slices` through a tree of 2-way merges: the caller's items
/// become keys (`codec`) as the first level reads them, and items again as
/// the last level writes them; the levels between merge keys.
fn tree<M: Merge2, C: Codec>(slices: &[&[M::K]], out: &mut [M::K], codec: C) {
    let lists: Vec<&[M::K]> = slices.iter().copied().filter(|s| !s.is_empty()).collect();
    let keys = Xor(0);
    match lists.len() {
        0 => return,
        1 => return out.copy_from_slice(lists[0]),
        2 => return M::merge2(lists[0], lists[1], out, codec, codec),
        _ => {}
    }
    let n = out.len();
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let [one, two] = &mut *scratch;
        let words = std::mem::size_of_val(out).div_ceil(8);
        for buf in [&mut *one, &mut *two] {
            if buf.len() < words {
                buf.resize(words, 0);
            }
        }
        let mut from: &mut [M::K] = &mut bytemuck::cast_slice_mut(&mut one[..words])[..n];
        let mut to: &mut [M::K] = &mut bytemuck::cast_slice_mut(&mut two[..words])[..n];
        // Level 1: the caller's slices into `from`, as keys.
        let mut lens = merge_level::<M, C>(&lists, from, codec, keys);
        // Further levels between the two buffers, the last into `out`.
        while lens.len() > 2 {
            let inputs = split(from, &lens);
            lens = merge_level::<M, Xor>(&inputs, to, keys, keys);
            std::mem::swap(&mut from, &mut to);
        }
        let inputs = split(from, &lens);
        if let [a, b] = inputs[..] {
            M::merge2(a, b, out, keys, codec);
        } else {
            // One list: keys made by a merge of the first level.
            out.iter_mut().zip(inputs[0]).for_each(|(o, &k)| *o = codec.dec1(k));
        }
    });
}

/// Merges `lists` pairwise into consecutive pieces of `to` (an odd last
/// one copied); returns the pieces' lengths.
fn merge_level<M: Merge2, I: Codec>(lists: &[&[M::K]], to: &mut [M::K], i: I, o: Xor) -> Vec<usize> {
    let mut lens = Vec::with_capacity(lists.len().div_ceil(2));
    let mut rest = to;
    for pair in lists.chunks(2) {
        let len = pair.iter().map(|s| s.len()).sum();
        let (piece, tail) = rest.split_at_mut(len);
        match pair {
            [a, b] => M::merge2(a, b, piece, i, o),
            [a] => piece.iter_mut().zip(a.iter()).for_each(|(p, &x)| *p = o.dec1(i.enc1(x))),
            _ => unreachable!("chunks of two"),
        }
        rest = tail;
        lens.push(len);
    }
    lens
}

/// `buf` cut into consecutive pieces of `lens`.
fn split<'b, K>(mut buf: &'b [K], lens: &[usize]) -> Vec<&'b [K]> {
    lens.iter()
        .map(|&n| {
            let (piece, rest) = buf.split_at(n);
            buf = rest;
            piece
        })
        .collect()
}

/// Merges two sorted slices one key at a time (no branch on the keys):
/// `a`'s items are keys by `ia`, `b`'s by `ib`, and keys become `out`'s
/// items by `o`.
#[inline(always)]
fn merge2_scalar<K: Key, A: Codec, B: Codec, O: Codec>(a: &[K], ia: A, b: &[K], ib: B, out: &mut [K], o: O) {
    assert_eq!(out.len(), a.len() + b.len());
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (ia.enc1(a[i]), ib.enc1(b[j]));
        let take_a = x <= y;
        out[n] = o.dec1(if take_a { x } else { y });
        i += take_a as usize;
        j += !take_a as usize;
        n += 1;
    }
    for (d, &x) in out[n..].iter_mut().zip(&a[i..]) {
        *d = o.dec1(ia.enc1(x));
    }
    n += a.len() - i;
    for (d, &x) in out[n..].iter_mut().zip(&b[j..]) {
        *d = o.dec1(ib.enc1(x));
    }
}

use crate::lanes::{Codec, Float, Key, Xor};

/// The kernels, once over [`crate::lanes::Lanes`].
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{merge2_scalar, Merge2};
    use crate::lanes::{Avx2x4, Avx2x8, Avx512x16, Avx512x8, Codec, Key, Lanes, Xor};

    /// Writes `$entry`, [`merge2`] compiled for one instruction set (a
    /// `#[target_feature]` function enabling `$features`, generic over the
    /// lanes, that the generic code is inlined into), and the [`Merge2`] of
    /// each of its lanes `$v` that calls it; slices shorter than a vector
    /// are merged one key at a time.
    macro_rules! merges {
        ($entry:ident: $features:literal; $($v:ty),*) => {
            /// [`merge2`] compiled for one instruction set.
            ///
            /// # Safety
            /// The CPU has the instruction set (and `V` needs no more); both
            /// slices hold at least `W` keys and `out` is as long as both.
            #[target_feature(enable = $features)]
            unsafe fn $entry<V: Lanes, I: Codec, O: Codec>(
                a: &[V::K],
                b: &[V::K],
                out: &mut [V::K],
                i: I,
                o: O,
            ) {
                merge2::<V, I, O>(a, b, out, i, o)
            }

            $(
                impl Merge2 for $v {
                    type K = <$v as Lanes>::K;
                    fn merge2<I: Codec, O: Codec>(
                        a: &[Self::K],
                        b: &[Self::K],
                        out: &mut [Self::K],
                        i: I,
                        o: O,
                    ) {
                        assert_eq!(out.len(), a.len() + b.len());
                        if a.len() < Self::W || b.len() < Self::W {
                            return merge2_scalar(a, i, b, i, out, o);
                        }
                        // SAFETY: the caller chose this level at most the
                        // CPU's (`merge_into_at` checks), and the lengths are
                        // checked.
                        unsafe { $entry::<Self, I, O>(a, b, out, i, o) }
                    }
                }
            )*
        };
    }

    merges!(merge2_avx512: "avx512f"; Avx512x16, Avx512x8);
    merges!(merge2_avx2: "avx2"; Avx2x8, Avx2x4);

    /// Merges two sorted vectors: (the W smallest, the W largest), each sorted.
    #[inline(always)]
    unsafe fn merge_vectors<V: Lanes>(a: V, b: V) -> (V, V) {
        let b = V::reverse(b);
        (V::clean(V::min(a, b)), V::clean(V::max(a, b)))
    }

    /// Merges two sorted slices of at least `W` keys each into `out`.
    ///
    /// # Safety
    /// The CPU has `V`'s instruction set; `a.len() >= W`, `b.len() >= W`
    /// and `out.len() == a.len() + b.len()`.
    #[inline(always)]
    unsafe fn merge2<V: Lanes, I: Codec, O: Codec>(a: &[V::K], b: &[V::K], out: &mut [V::K], i: I, o: O) {
        let w = V::W;
        debug_assert!(a.len() >= w && b.len() >= w && out.len() == a.len() + b.len());
        // SAFETY (loads and stores below): every load reads W keys at an
        // index with at least W keys left (checked before it); every store
        // writes W keys at `n`, and `n + W` ≤ the keys loaded so far ≤
        // `out.len()`.
        // (A function, not a closure: a closure is compiled without the
        // entry point's instruction set.)
        #[inline(always)]
        unsafe fn load<V: Lanes, I: Codec>(s: &[V::K], at: usize, i: I) -> V {
            i.enc(V::load(s.as_ptr().add(at)))
        }
        let (na, nb) = (a.len(), b.len());
        let (mut va, mut vb) = (load(a, 0, i), load(b, 0, i));
        let (mut ia, mut ib, mut n) = (w, w, 0);
        loop {
            let (lo, hi) = merge_vectors(va, vb);
            V::store(out.as_mut_ptr().add(n), o.dec(lo));
            n += w;
            va = hi;
            // The next W come from the slice whose next key is smaller.
            let take_a = match (ia < na, ib < nb) {
                (true, true) => i.enc1(a[ia]) <= i.enc1(b[ib]),
                (more_a, _) => more_a,
            };
            if take_a && na - ia >= w {
                vb = load(a, ia, i);
                ia += w;
            } else if !take_a && nb - ib >= w {
                vb = load(b, ib, i);
                ib += w;
            } else {
                break;
            }
        }
        // The tail: the W kept keys, and what is left of a and b (the
        // slice that ran short has fewer than W left).
        let mut kept = [V::K::MAX; 16];
        V::store(kept.as_mut_ptr(), va);
        let (short, long) = if na - ia < w { (&a[ia..], &b[ib..]) } else { (&b[ib..], &a[ia..]) };
        let mut small = [V::K::MAX; 32];
        let small = &mut small[..w + short.len()];
        merge2_scalar(&kept[..w], Xor(0), short, i, small, Xor(0));
        merge2_scalar(small, Xor(0), long, i, &mut out[n..], o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd_sort::tests::{bits, items, xorshift, Item};
    use proptest::prelude::*;

    /// The runs sorted by key, merged here by every level this CPU has
    /// (the scalar level: the tree of one-key-at-a-time merges): the same
    /// bytes as a sort of all.
    fn check<T: Item>(mut runs: Vec<Vec<T>>, rev: bool) {
        let sort = |v: &mut Vec<T>| {
            v.sort_unstable_by_key(|x| x.key());
            if rev {
                v.reverse();
            }
        };
        runs.iter_mut().for_each(sort);
        let slices: Vec<&[T]> = runs.iter().map(|r| r.as_slice()).collect();
        let mut expect: Vec<T> = runs.concat();
        sort(&mut expect);
        for at in crate::simd::levels() {
            let mut out = expect.clone();
            out.iter_mut().for_each(|x| *x = T::of(0x5A5A_5A5A));
            merge_into_at(at, &slices, &mut out, rev);
            assert!(bits(&out) == bits(&expect), "{at}: {} slices, rev {rev}", runs.len());
        }
    }

    /// Runs of every format: random lengths around the vector widths.
    fn runs_of<T: Item>(seed: u64) {
        let mut next = xorshift(seed);
        for round in 0..300 {
            let k = (next() % 12) as usize;
            let runs = (0..k)
                .map(|_| {
                    let n = (next() % if round % 2 == 0 { 40 } else { 400 }) as usize;
                    items::<T>(&mut next, n, (round % 4) as u8)
                })
                .collect();
            check(runs, round % 3 == 0);
        }
    }

    #[test]
    fn every_format_merges_like_a_sort() {
        runs_of::<u32>(1);
        runs_of::<i32>(2);
        runs_of::<f32>(3);
        runs_of::<u64>(4);
        runs_of::<i64>(5);
        runs_of::<f64>(6);
    }

    proptest! {
        #[test]
        fn merges_like_a_sort(runs in prop::collection::vec(prop::collection::vec(any::<u32>(), 0..200), 0..12), rev: bool) {
            check(runs, rev);
        }

        #[test]
        fn merges_i64_like_a_sort(runs in prop::collection::vec(prop::collection::vec(any::<i64>(), 0..200), 0..12), rev: bool) {
            check(runs, rev);
        }

        #[test]
        fn few_distinct_keys(runs in prop::collection::vec(prop::collection::vec(0u64..4, 0..300), 1..10)) {
            check(runs, false);
        }
    }

    #[test]
    fn disjoint_and_interleaved_ranges() {
        // One slice entirely below another, with a short tail above both;
        // long slices against a short one.
        let low: Vec<u32> = (0..1000).collect();
        let mut high: Vec<u32> = (5000..9000).collect();
        high.extend([u32::MAX; 5]);
        check(vec![high.clone(), low.clone()], false);
        check(vec![low.clone(), high.clone(), (0..17).map(|x| x * 700).collect()], false);
        check(
            vec![
                (0..100_000).map(|x| x * 3).collect(),
                (0..100_000).map(|x| x * 5 + 1).collect::<Vec<u32>>(),
            ],
            false,
        );
        check(vec![vec![7u32; 40], vec![7; 33], vec![u32::MAX; 20], vec![0; 16]], false);
        check(vec![low, high], true);
        let wide = |r: std::ops::Range<u64>, m: u64| r.map(|x| (x * m) << 20).collect::<Vec<u64>>();
        check(vec![wide(0..50_000, 3), wide(0..50_000, 5), wide(10..20, 1)], false);
        check(vec![vec![f64::NAN; 9], vec![-0.0; 5], vec![0.0; 70], vec![f64::NEG_INFINITY; 3]], true);
    }
}
