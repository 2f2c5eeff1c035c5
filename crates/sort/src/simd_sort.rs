//! Sorting 32-bit integer keys in place with a SIMD quicksort (Bramas,
//! IJACSA 2017; Intel's x86-simd-sort, which NumPy uses), written once over
//! [`crate::lanes::Lanes`] and compiled for AVX-512 (16 keys per vector)
//! and AVX2 (8 keys per vector, issue 38: most cloud CPUs and laptops have
//! no AVX-512); [`crate::simd::level`] chooses.
//!
//! Run formation of u32 and i32 was bound by the radix sort: `rdst` takes
//! about 9 ns per key on this project's machine, and two of its threads on
//! the machine's two vCPUs slow each other to half speed (two concurrent
//! 16 Mi sorts 0.28–0.36 s each against 0.17 s alone: it streams the data
//! through the cache twice per digit). A quicksort that partitions 16 keys
//! per instruction touches each key once per level, in cache-sized pieces
//! below the top levels, and its two threads barely meet:
//!
//! ```text
//!   pivot = the median of 16 keys spread over the slice
//!   partition: keep the first and last 4 vectors (64 keys each end) in
//!   registers (room to write), then load 4 vectors from whichever end
//!   has less room; each compared with the pivot (a mask), its smaller
//!   keys compressed to the left store, the others to the right store;
//!   the kept vectors last
//!   ≤ 16 vectors (256 keys, 128 with AVX2): 1–16 vectors (padded with
//!   u32::MAX) sorted by a bitonic network in registers, as simd_merge
//!   merges them
//!   (AVX2 has no compress: each vector is permuted by a table so that
//!   its smaller keys come first, and stored at both ends)
//! ```
//!
//! The recorded evidence is the sort campaign
//! `bench/results/2026-11-27c-physical`: run formation of 1 GiB u32 in
//! 2.52 s against `rdst`'s 3.59 s. A one-off timing harness (not kept) on
//! 32 Mi random u32, in one run, gave: one thread 0.31–0.37 s (NumPy's AVX-512 sort 0.23–0.26 s, `rdst` 0.41–0.66 s),
//! two threads 0.18–0.24 s (`rdst` 0.31–0.38 s). A first version with one
//! vector per step and no POPCNT instruction (a software popcount) took
//! 0.56–0.60 s on one thread; four vectors per step choose an end a
//! quarter as often (a branch the data decides) and keep more loads in
//! flight; eight were no faster. `perf` of a 1 GiB sort: the partition 45 % of all
//! samples, the networks 13 %.
//!
//! The parts of a partition longer than [`PAR`] keys are sorted on the
//! caller's rayon pool (`join`). A partition whose left part is empty (the
//! pivot was the smallest key) splits off the keys equal to the pivot, so
//! every level makes progress on repeated keys; after `2 log₂ n` levels
//! (an adversarial input) a slice falls back to `slice::sort_unstable`.
//!
//! Keys are sorted as unsigned after an XOR with `flip` (the
//! [`crate::simd_merge`] convention: 0 for u32 ascending, `!0` descending,
//! `1 << 31` for i32): the slice is XORed before and after. At
//! [`Level::Scalar`] the caller keeps its radix sort.

use rayon::prelude::*;

use crate::simd::{level, Level};

/// Parts longer than this are sorted as separate rayon tasks.
const PAR: usize = 1 << 16;

/// Sorts `keys` by `x ^ flip`, in place, on the current rayon pool, with
/// the kernels of [`level`] (at [`Level::Scalar`], `par_sort_unstable`:
/// callers use their radix sort there instead).
pub(crate) fn sort(keys: &mut [u32], flip: u32) {
    sort_at(level(), keys, flip)
}

/// [`sort`] with the kernels of `at` (at most [`crate::simd::detected`]).
pub(crate) fn sort_at(at: Level, keys: &mut [u32], flip: u32) {
    #[cfg(target_arch = "x86_64")]
    if at >= Level::Avx2 {
        assert!(at <= crate::simd::detected(), "the CPU has no {at}");
        let xor = |keys: &mut [u32]| {
            keys.par_chunks_mut(1 << 16).for_each(|c| c.iter_mut().for_each(|x| *x ^= flip))
        };
        if flip != 0 {
            xor(keys);
        }
        let depth = 2 * (usize::BITS - keys.len().leading_zeros());
        // SAFETY: the CPU has the level's instruction set and POPCNT
        // (detected() checked both).
        unsafe {
            if at == Level::Avx512 {
                x86::quicksort_avx512(keys, depth)
            } else {
                x86::quicksort_avx2(keys, depth)
            }
        }
        if flip != 0 {
            xor(keys);
        }
        return;
    }
    keys.par_sort_unstable_by_key(|&x| x ^ flip);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::PAR;
    use crate::lanes::{Avx2, Avx512, Lanes};

    /// The quicksort of [`Avx512`]; `depth` levels of partitions left
    /// before it falls back to `sort_unstable`.
    ///
    /// # Safety
    /// The CPU has AVX-512F and POPCNT.
    #[target_feature(enable = "avx512f,popcnt")]
    pub(super) unsafe fn quicksort_avx512(keys: &mut [u32], depth: u32) {
        quicksort::<Avx512>(keys, depth)
    }

    /// The quicksort of [`Avx2`].
    ///
    /// # Safety
    /// The CPU has AVX2 and POPCNT.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn quicksort_avx2(keys: &mut [u32], depth: u32) {
        quicksort::<Avx2>(keys, depth)
    }

    // The partition and the networks out of line, each compiled for its
    // instruction set (inlined into every level of the quicksort, they made
    // it 13 % slower: a larger frame and more spills per call). They are
    // called directly: a call through a function pointer was inlined
    // despite `inline(never)`.

    #[target_feature(enable = "avx512f,popcnt")]
    #[inline(never)]
    unsafe fn partition_avx512(keys: &mut [u32], pivot: u32) -> usize {
        partition_by::<Avx512, 4>(keys, pivot)
    }

    #[target_feature(enable = "avx2,popcnt")]
    #[inline(never)]
    unsafe fn partition_avx2(keys: &mut [u32], pivot: u32) -> usize {
        partition_by::<Avx2, 8>(keys, pivot)
    }

    #[target_feature(enable = "avx512f")]
    #[inline(never)]
    unsafe fn vectors_avx512<const N: usize>(keys: &mut [u32]) {
        sort_vectors::<Avx512, N>(keys)
    }

    #[target_feature(enable = "avx2")]
    #[inline(never)]
    unsafe fn vectors_avx2<const N: usize>(keys: &mut [u32]) {
        sort_vectors::<Avx2, N>(keys)
    }

    /// An instruction set's compiled pieces, for the generic [`quicksort`].
    /// Every function needs the instruction set.
    trait Kernels: Lanes {
        unsafe fn quicksort(keys: &mut [u32], depth: u32);
        /// Puts the keys below `pivot` first; returns their count. `keys`
        /// holds more than [`small`] keys.
        unsafe fn split(keys: &mut [u32], pivot: u32) -> usize;
        /// Sorts at most `N` vectors of keys ([`sort_vectors`]).
        unsafe fn vectors<const N: usize>(keys: &mut [u32]);
    }

    impl Kernels for Avx512 {
        #[inline(always)]
        unsafe fn quicksort(keys: &mut [u32], depth: u32) {
            quicksort_avx512(keys, depth)
        }
        #[inline(always)]
        unsafe fn split(keys: &mut [u32], pivot: u32) -> usize {
            partition_avx512(keys, pivot)
        }
        #[inline(always)]
        unsafe fn vectors<const N: usize>(keys: &mut [u32]) {
            vectors_avx512::<N>(keys)
        }
    }

    impl Kernels for Avx2 {
        #[inline(always)]
        unsafe fn quicksort(keys: &mut [u32], depth: u32) {
            quicksort_avx2(keys, depth)
        }
        #[inline(always)]
        unsafe fn split(keys: &mut [u32], pivot: u32) -> usize {
            partition_avx2(keys, pivot)
        }
        #[inline(always)]
        unsafe fn vectors<const N: usize>(keys: &mut [u32]) {
            vectors_avx2::<N>(keys)
        }
    }

    /// Slices up to this many keys are sorted by a network in registers.
    #[inline(always)]
    fn small<V: Lanes>() -> usize {
        16 * V::W
    }

    /// One level: partition, then the instruction set's quicksort on
    /// both parts.
    #[inline(always)]
    unsafe fn quicksort<V: Kernels>(keys: &mut [u32], depth: u32) {
        let n = keys.len();
        if n <= small::<V>() {
            return sort_small::<V>(keys);
        }
        if depth == 0 {
            return keys.sort_unstable();
        }
        let pivot = pivot::<V>(keys);
        let mut k = V::split(keys, pivot);
        let mut start = 0;
        if k == 0 {
            // The pivot is the smallest key: the keys equal to it go first
            // and are in place. (If it is u32::MAX too, all keys are equal.)
            if pivot == u32::MAX {
                return;
            }
            k = V::split(keys, pivot + 1);
            start = k;
        }
        let (left, right) = keys.split_at_mut(k);
        let left = &mut left[start..];
        if n > PAR {
            // SAFETY (both tasks): the CPU has the instruction set, as this
            // call needs.
            rayon::join(
                || unsafe { V::quicksort(left, depth - 1) },
                || unsafe { V::quicksort(right, depth - 1) },
            );
        } else {
            V::quicksort(left, depth - 1);
            V::quicksort(right, depth - 1);
        }
    }

    /// The median of 16 keys spread evenly over `keys` (at least 16),
    /// sorted by the networks (a call of `sort_unstable` here cost 9 % of
    /// the sort: a partition is a few hundred keys at the bottom levels).
    #[inline(always)]
    unsafe fn pivot<V: Kernels>(keys: &[u32]) -> u32 {
        let step = keys.len() / 16;
        let mut sample = [0u32; 16];
        for (i, s) in sample.iter_mut().enumerate() {
            *s = keys[i * step + step / 2];
        }
        sort_small::<V>(&mut sample);
        sample[8]
    }

    /// [`Kernels::split`], `U` vectors a step (64 keys: 4 vectors of
    /// AVX-512, 8 of AVX2; fewer mispredicted choices of an end, more
    /// independent work between them).
    #[inline(always)]
    unsafe fn partition_by<V: Lanes, const U: usize>(keys: &mut [u32], pivot: u32) -> usize {
        let uw = U * V::W;
        let n = keys.len();
        debug_assert!(n > small::<V>() && small::<V>() >= 2 * uw);
        // Whole steps from here: the first n % UW keys partitioned one by
        // one, to the ends of the slice.
        let (mut lo, mut hi) = (0, n);
        for _ in 0..n % uw {
            if keys[lo] < pivot {
                lo += 1;
            } else {
                hi -= 1;
                keys.swap(lo, hi);
            }
        }
        let p = keys.as_mut_ptr();
        let pv = V::splat(pivot);
        // Keys [lo, hi), a multiple of UW and at least 2 UW long: the first
        // and last U vectors kept in registers leave 2 UW free slots;
        // unread keys are [l, r), the left store writes at ls, the right
        // one ends at rs. Free slots: [ls, l) and [r, rs), 2 UW in all
        // before each load; loading U vectors from the end with less room
        // gives both ends at least UW, so each of the U steps' stores (up
        // to a whole vector at ls, and below rs) overwrites only keys
        // already read; in the last steps, [ls, rs) is one free stretch of
        // at least 2 vectors, or exactly one (both stores then write the
        // same lanes).
        //
        // SAFETY (every load and store): all indices lie in [lo, hi) ⊆
        // [0, n), by the invariant above.
        // (No closures here: a closure is compiled without the entry
        // point's instruction set, and its vector operations would become
        // calls.)
        let (first, last) = (load::<V, U>(p.add(lo)), load::<V, U>(p.add(hi - uw)));
        let (mut ls, mut rs) = (lo, hi);
        let (mut l, mut r) = (lo + uw, hi - uw);
        while l < r {
            let vs = if rs - r < l - ls {
                r -= uw;
                load::<V, U>(p.add(r))
            } else {
                l += uw;
                load::<V, U>(p.add(l - uw))
            };
            put(vs, pv, p, &mut ls, &mut rs);
        }
        put(first, pv, p, &mut ls, &mut rs);
        put(last, pv, p, &mut ls, &mut rs);
        debug_assert_eq!(ls, rs);
        ls
    }

    /// `U` vectors from `at` on.
    #[inline(always)]
    unsafe fn load<V: Lanes, const U: usize>(at: *const u32) -> [V; U] {
        let mut vs = [V::splat(0); U];
        for (j, v) in vs.iter_mut().enumerate() {
            *v = V::load(at.add(j * V::W));
        }
        vs
    }

    /// Partition steps of the vectors `vs`: smaller keys stored from
    /// `p + ls` on, the others down to `p + rs`; both moved.
    #[inline(always)]
    unsafe fn put<V: Lanes, const U: usize>(
        vs: [V; U],
        pivot: V,
        p: *mut u32,
        ls: &mut usize,
        rs: &mut usize,
    ) {
        for v in vs {
            let c = V::partition(v, pivot, p.add(*ls), p.add(*rs));
            *ls += V::W - c;
            *rs -= c;
        }
    }

    /// Sorts at most 16 vectors of keys in registers.
    #[inline(always)]
    unsafe fn sort_small<V: Kernels>(keys: &mut [u32]) {
        match keys.len().div_ceil(V::W) {
            0 => {}
            1 => V::vectors::<1>(keys),
            2 => V::vectors::<2>(keys),
            3 | 4 => V::vectors::<4>(keys),
            5..=8 => V::vectors::<8>(keys),
            _ => V::vectors::<16>(keys),
        }
    }

    /// Sorts at most `N` vectors of keys: loaded into `N` vectors (padded
    /// with u32::MAX, which sorts last), each sorted, then sorted blocks of
    /// 1, 2, 4 … vectors merged pairwise; the first `keys.len()` stored back.
    #[inline(always)]
    unsafe fn sort_vectors<V: Lanes, const N: usize>(keys: &mut [u32]) {
        let (n, w) = (keys.len(), V::W);
        debug_assert!(n <= N * w);
        let count = |i: usize| n.saturating_sub(i * w).min(w);
        let mut v = [V::splat(u32::MAX); N];
        for (i, x) in v.iter_mut().enumerate() {
            // SAFETY: only the keys of the slice are read.
            *x = V::sort(V::load_first(keys.as_ptr().add(i * w), count(i)));
        }
        let mut b = 1;
        while b < N {
            for block in v.chunks_exact_mut(2 * b) {
                merge_blocks(block, b);
            }
            b *= 2;
        }
        for (i, x) in v.iter().enumerate() {
            // SAFETY: only the keys of the slice are written.
            V::store_first(keys.as_mut_ptr().add(i * w), count(i), *x);
        }
    }

    /// Merges two sorted blocks of `b` vectors (`block` = A then B) into
    /// one: A against B reversed gives a low and a high bitonic half
    /// (every key of the low ≤ every key of the high), each sorted by
    /// half-cleaners between vectors `b/2 … 1` apart, then in each vector.
    #[inline(always)]
    unsafe fn merge_blocks<V: Lanes>(block: &mut [V], b: usize) {
        let mut high = [V::splat(0); 8];
        for i in 0..b {
            let (x, y) = (block[i], V::reverse(block[2 * b - 1 - i]));
            block[i] = V::min(x, y);
            high[i] = V::max(x, y);
        }
        block[b..].copy_from_slice(&high[..b]);
        for half in block.chunks_exact_mut(b) {
            let mut d = b / 2;
            while d > 0 {
                for j in 0..b {
                    if j & d == 0 {
                        let (x, y) = (half[j], half[j + d]);
                        half[j] = V::min(x, y);
                        half[j + d] = V::max(x, y);
                    }
                }
                d /= 2;
            }
            for x in half.iter_mut() {
                *x = V::clean(*x);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Sorted by every level this CPU has, against `sort_unstable`.
    fn check(keys: Vec<u32>, flip: u32) {
        let mut want = keys.clone();
        want.sort_unstable_by_key(|&x| x ^ flip);
        for at in crate::simd::levels() {
            let mut got = keys.clone();
            sort_at(at, &mut got, flip);
            assert!(got == want, "{at}: {} keys, flip {flip:#x}", want.len());
        }
    }

    proptest! {
        #[test]
        fn sorts_like_slice_sort(
            keys in prop::collection::vec(any::<u32>(), 0..3000),
            flip in prop::sample::select(vec![0u32, !0, 1 << 31, !0 ^ (1 << 31)]),
        ) {
            check(keys, flip);
        }

        #[test]
        fn few_distinct_keys(keys in prop::collection::vec(0u32..4, 0..3000), top: bool) {
            // Near the top of the range too (the pivot + 1 split).
            check(keys.into_iter().map(|k| if top { u32::MAX - k } else { k }).collect(), 0);
        }
    }

    #[test]
    fn every_small_size_and_large_inputs() {
        let mut x = 1u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for n in 0..=600 {
            check((0..n).map(|_| next()).collect(), 0);
        }
        check((0..3_000_000).map(|_| next()).collect(), 0);
        check((0..1_000_000).map(|_| next() % 1000).collect(), 1 << 31);
        check((0..1_000_000u32).collect(), 0);
        check((0..1_000_000u32).rev().collect(), 0);
        check(vec![u32::MAX; 100_000], 0);
        check(vec![0; 100_000], !0);
        // Organ pipe: ascending, then descending.
        check((0..500_000u32).chain((0..500_000).rev()).collect(), 0);
    }
}
