//! Merging 32-bit integer keys with bitonic merge networks (Chhugani et
//! al., VLDB 2008; Inoue & Taura, VLDB 2015), written once over
//! [`crate::lanes::Lanes`] for AVX-512 (16 keys per vector) and AVX2 (8);
//! [`crate::simd::level`] chooses.
//!
//! A loser tree ([`crate::key_tree`]) plays one match per level for every
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
//! (The figures above are AVX-512's; AVX2 merges 8 keys per network in
//! 6 steps.)
//!
//! Keys are compared as unsigned `u32` after an XOR with `flip`: 0 for u32
//! ascending, `!0` descending, `1 << 31` for i32 (the sign bit flipped, as
//! [`crate::key`] does), so one kernel serves u32 and i32 in both orders.
//! Equal keys are equal values here, so the order of ties does not matter.
//! At [`Level::Scalar`] the caller keeps the loser tree.

use std::cell::RefCell;

use crate::simd::{level, Level};

thread_local! {
    /// The two scratch buffers of the levels of a merge on this thread.
    static SCRATCH: RefCell<[Vec<u32>; 2]> = const { RefCell::new([Vec::new(), Vec::new()]) };
}

/// Merges `slices` (each sorted by `x ^ flip`) into `out`, whose length is
/// their total, with the kernels of [`level`]. At [`Level::Scalar`] it
/// still merges, one key at a time: callers keep their loser tree there.
pub(crate) fn merge_into(slices: &[&[u32]], out: &mut [u32], flip: u32) {
    merge_into_at(level(), slices, out, flip)
}

/// [`merge_into`] with the kernels of `at` (at most
/// [`crate::simd::detected`]).
pub(crate) fn merge_into_at(at: Level, slices: &[&[u32]], out: &mut [u32], flip: u32) {
    assert!(at <= crate::simd::detected(), "the CPU has no {at}");
    debug_assert_eq!(out.len(), slices.iter().map(|s| s.len()).sum::<usize>());
    let lists: Vec<&[u32]> = slices.iter().copied().filter(|s| !s.is_empty()).collect();
    match lists.len() {
        0 => return,
        1 => return out.copy_from_slice(lists[0]),
        2 => return merge2(at, lists[0], lists[1], out, flip),
        _ => {}
    }
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let [one, two] = &mut *scratch;
        for buf in [&mut *one, &mut *two] {
            if buf.len() < out.len() {
                buf.resize(out.len(), 0);
            }
        }
        // Level 1: the caller's slices into `one`.
        let mut lens = merge_level(at, &lists, &mut one[..out.len()], flip);
        let (mut from, mut to) = (one, two);
        // Further levels between the two buffers, the last into `out`.
        while lens.len() > 2 {
            let inputs = split(&from[..out.len()], &lens);
            lens = merge_level(at, &inputs, &mut to[..out.len()], flip);
            std::mem::swap(&mut from, &mut to);
        }
        let inputs = split(&from[..out.len()], &lens);
        if let [a, b] = inputs[..] {
            merge2(at, a, b, out, flip);
        } else {
            out.copy_from_slice(inputs[0]);
        }
    });
}

/// Merges `lists` pairwise into consecutive pieces of `to` (an odd last
/// one copied); returns the pieces' lengths.
fn merge_level(at: Level, lists: &[&[u32]], to: &mut [u32], flip: u32) -> Vec<usize> {
    let mut lens = Vec::with_capacity(lists.len().div_ceil(2));
    let mut rest = to;
    for pair in lists.chunks(2) {
        let len = pair.iter().map(|s| s.len()).sum();
        let (piece, tail) = rest.split_at_mut(len);
        match pair {
            [a, b] => merge2(at, a, b, piece, flip),
            [a] => piece.copy_from_slice(a),
            _ => unreachable!("chunks of two"),
        }
        rest = tail;
        lens.push(len);
    }
    lens
}

/// `buf` cut into consecutive pieces of `lens`.
fn split<'b>(mut buf: &'b [u32], lens: &[usize]) -> Vec<&'b [u32]> {
    lens.iter()
        .map(|&n| {
            let (piece, rest) = buf.split_at(n);
            buf = rest;
            piece
        })
        .collect()
}

/// Merges two sorted slices into `out` (their total length).
fn merge2(at: Level, a: &[u32], b: &[u32], out: &mut [u32], flip: u32) {
    assert_eq!(out.len(), a.len() + b.len());
    #[cfg(target_arch = "x86_64")]
    {
        use crate::lanes::Lanes;
        // SAFETY (both): the CPU has the level's instruction set (checked
        // by the caller against `detected()`), and the lengths are checked.
        if at == Level::Avx512 && a.len() >= x86::Avx512::W && b.len() >= x86::Avx512::W {
            return unsafe { x86::merge2_avx512(a, b, out, flip) };
        }
        if at == Level::Avx2 && a.len() >= x86::Avx2::W && b.len() >= x86::Avx2::W {
            return unsafe { x86::merge2_avx2(a, b, out, flip) };
        }
    }
    let _ = at;
    merge2_scalar(a, b, out, flip);
}

/// Merges two sorted slices one key at a time (no branch on the keys).
fn merge2_scalar(a: &[u32], b: &[u32], out: &mut [u32], flip: u32) {
    let (mut i, mut j, mut o) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        let take_a = (x ^ flip) <= (y ^ flip);
        out[o] = if take_a { x } else { y };
        i += take_a as usize;
        j += !take_a as usize;
        o += 1;
    }
    out[o..o + a.len() - i].copy_from_slice(&a[i..]);
    o += a.len() - i;
    out[o..].copy_from_slice(&b[j..]);
}

/// The kernels, once over [`crate::lanes::Lanes`].
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::merge2_scalar;
    pub(super) use crate::lanes::{Avx2, Avx512, Lanes};

    /// [`merge2`] of [`Avx512`].
    ///
    /// # Safety
    /// The CPU has AVX-512F; both slices hold at least 16 keys and `out`
    /// is as long as both.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn merge2_avx512(a: &[u32], b: &[u32], out: &mut [u32], flip: u32) {
        merge2::<Avx512>(a, b, out, flip)
    }

    /// [`merge2`] of [`Avx2`].
    ///
    /// # Safety
    /// The CPU has AVX2; both slices hold at least 8 keys and `out` is as
    /// long as both.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn merge2_avx2(a: &[u32], b: &[u32], out: &mut [u32], flip: u32) {
        merge2::<Avx2>(a, b, out, flip)
    }

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
    unsafe fn merge2<V: Lanes>(a: &[u32], b: &[u32], out: &mut [u32], flip: u32) {
        let w = V::W;
        debug_assert!(a.len() >= w && b.len() >= w && out.len() == a.len() + b.len());
        let f = V::splat(flip);
        // SAFETY (loads and stores below): every load reads W keys at an
        // index with at least W keys left (checked before it); every store
        // writes W keys at `o`, and `o + W` ≤ the keys loaded so far ≤
        // `out.len()`.
        // (A function, not a closure: a closure is compiled without the
        // entry point's instruction set.)
        #[inline(always)]
        unsafe fn load<V: Lanes>(s: &[u32], i: usize, f: V) -> V {
            V::xor(V::load(s.as_ptr().add(i)), f)
        }
        let (na, nb) = (a.len(), b.len());
        let (mut va, mut vb) = (load(a, 0, f), load(b, 0, f));
        let (mut ia, mut ib, mut o) = (w, w, 0);
        loop {
            let (lo, hi) = merge_vectors(va, vb);
            V::store(out.as_mut_ptr().add(o), V::xor(lo, f));
            o += w;
            va = hi;
            // The next W come from the slice whose next key is smaller.
            let take_a = match (ia < na, ib < nb) {
                (true, true) => (a[ia] ^ flip) <= (b[ib] ^ flip),
                (more_a, _) => more_a,
            };
            if take_a && na - ia >= w {
                vb = load(a, ia, f);
                ia += w;
            } else if !take_a && nb - ib >= w {
                vb = load(b, ib, f);
                ib += w;
            } else {
                break;
            }
        }
        // The tail: the W kept keys, and what is left of a and b (the
        // slice that ran short has fewer than W left).
        let mut kept = [0u32; 16];
        V::store(kept.as_mut_ptr(), V::xor(va, f));
        let (short, long) = if na - ia < w { (&a[ia..], &b[ib..]) } else { (&b[ib..], &a[ia..]) };
        let mut small = [0u32; 32];
        let small = &mut small[..w + short.len()];
        merge2_scalar(&kept[..w], short, small, flip);
        merge2_scalar(small, long, &mut out[o..], flip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(x: u32, flip: u32) -> u32 {
        x ^ flip
    }

    /// The slices sorted by `x ^ flip`, merged here by every level this
    /// CPU has (the scalar level: the tree of one-key-at-a-time merges)
    /// and by a sort.
    fn check(mut runs: Vec<Vec<u32>>, flip: u32) {
        runs.iter_mut().for_each(|r| r.sort_by_key(|&x| key(x, flip)));
        let slices: Vec<&[u32]> = runs.iter().map(|r| r.as_slice()).collect();
        let mut expect: Vec<u32> = runs.concat();
        expect.sort_by_key(|&x| key(x, flip));
        for at in crate::simd::levels() {
            let mut out = vec![0u32; expect.len()];
            merge_into_at(at, &slices, &mut out, flip);
            assert!(out == expect, "{at}: {} slices, flip {flip:#x}", runs.len());
        }
    }

    proptest! {
        #[test]
        fn merges_like_a_sort(
            runs in prop::collection::vec(prop::collection::vec(any::<u32>(), 0..200), 0..12),
            flip in prop::sample::select(vec![0u32, !0, 1 << 31, !0 ^ (1 << 31)]),
        ) {
            check(runs, flip);
        }

        #[test]
        fn few_distinct_keys(runs in prop::collection::vec(prop::collection::vec(0u32..4, 0..300), 1..10)) {
            check(runs, 0);
        }
    }

    #[test]
    fn disjoint_and_interleaved_ranges() {
        // One slice entirely below another, with a short tail above both;
        // long slices against a short one.
        let low: Vec<u32> = (0..1000).collect();
        let mut high: Vec<u32> = (5000..9000).collect();
        high.extend([u32::MAX; 5]);
        check(vec![high.clone(), low.clone()], 0);
        check(vec![low.clone(), high.clone(), (0..17).map(|x| x * 700).collect()], 0);
        check(vec![(0..100_000).map(|x| x * 3).collect(), (0..100_000).map(|x| x * 5 + 1).collect()], 0);
        check(vec![vec![7; 40], vec![7; 33], vec![u32::MAX; 20], vec![0; 16]], 0);
        check(vec![low, high], !0);
    }
}
