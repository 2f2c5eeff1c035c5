//! Sorting 32-bit integer keys in place with an AVX-512 quicksort
//! (Bramas, IJACSA 2017; Intel's x86-simd-sort, which NumPy uses).
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
//!   ≤ 256 keys: 1–16 vectors (padded with u32::MAX) sorted by a bitonic
//!   network in registers, as simd_merge merges them
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
//! `1 << 31` for i32): the slice is XORed before and after. Without
//! AVX-512 ([`available`] false) the caller keeps its radix sort.

use rayon::prelude::*;

pub(crate) use crate::simd_merge::available;

/// Slices up to this long are sorted by a network in registers.
const SMALL: usize = 256;

/// Parts longer than this are sorted as separate rayon tasks.
const PAR: usize = 1 << 16;

/// Sorts `keys` by `x ^ flip`, in place, on the current rayon pool.
pub(crate) fn sort(keys: &mut [u32], flip: u32) {
    #[cfg(target_arch = "x86_64")]
    if available() && std::arch::is_x86_feature_detected!("popcnt") {
        let xor = |keys: &mut [u32]| {
            keys.par_chunks_mut(1 << 16).for_each(|c| c.iter_mut().for_each(|x| *x ^= flip))
        };
        if flip != 0 {
            xor(keys);
        }
        let depth = 2 * (usize::BITS - keys.len().leading_zeros());
        // SAFETY: the CPU has AVX-512F and POPCNT (checked above).
        unsafe { avx512::quicksort(keys, depth) };
        if flip != 0 {
            xor(keys);
        }
        return;
    }
    keys.par_sort_unstable_by_key(|&x| x ^ flip);
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{PAR, SMALL};
    use crate::simd_merge::avx512::{clean, reverse};
    use crate::simd_merge::W;
    use std::arch::x86_64::*;

    /// Sorts `keys` ascending (unsigned); `depth` levels of partitions
    /// left before it falls back to `sort_unstable`.
    ///
    /// # Safety
    /// The CPU has AVX-512F and POPCNT.
    #[target_feature(enable = "avx512f,popcnt")]
    pub(super) unsafe fn quicksort(keys: &mut [u32], depth: u32) {
        let n = keys.len();
        if n <= SMALL {
            return sort_small(keys);
        }
        if depth == 0 {
            return keys.sort_unstable();
        }
        let pivot = pivot(keys);
        let mut k = partition(keys, pivot);
        let mut start = 0;
        if k == 0 {
            // The pivot is the smallest key: the keys equal to it go first
            // and are in place. (If it is u32::MAX too, all keys are equal.)
            if pivot == u32::MAX {
                return;
            }
            k = partition(keys, pivot + 1);
            start = k;
        }
        let (left, right) = keys.split_at_mut(k);
        let left = &mut left[start..];
        if n > PAR {
            // SAFETY (both tasks): the caller's CPU has AVX-512F and POPCNT.
            rayon::join(|| unsafe { quicksort(left, depth - 1) }, || unsafe { quicksort(right, depth - 1) });
        } else {
            quicksort(left, depth - 1);
            quicksort(right, depth - 1);
        }
    }

    /// The median of 16 keys spread evenly over `keys` (at least 16).
    #[target_feature(enable = "avx512f")]
    fn pivot(keys: &[u32]) -> u32 {
        let step = keys.len() / W;
        let mut sample = [0u32; W];
        for (i, s) in sample.iter_mut().enumerate() {
            *s = keys[i * step + step / 2];
        }
        // SAFETY: `sample` holds W keys.
        let v = sort16(unsafe { _mm512_loadu_si512(sample.as_ptr().cast()) });
        unsafe { _mm512_storeu_si512(sample.as_mut_ptr().cast(), v) };
        sample[W / 2]
    }

    /// Puts the keys below `pivot` first, in place; returns their count.
    /// `keys` holds more than [`SMALL`] keys.
    #[target_feature(enable = "avx512f,popcnt")]
    fn partition(keys: &mut [u32], pivot: u32) -> usize {
        /// Vectors loaded and stored per step (fewer mispredicted choices
        /// of an end, more independent work between them).
        const U: usize = 4;
        const UW: usize = U * W;
        let n = keys.len();
        debug_assert!(n > SMALL && SMALL >= 2 * UW);
        // Whole steps from here: the first n % UW keys partitioned one by
        // one, to the ends of the slice.
        let (mut lo, mut hi) = (0, n);
        for _ in 0..n % UW {
            if keys[lo] < pivot {
                lo += 1;
            } else {
                hi -= 1;
                keys.swap(lo, hi);
            }
        }
        let p = keys.as_mut_ptr();
        let pv = _mm512_set1_epi32(pivot as i32);
        // Keys [lo, hi), a multiple of UW and at least 2 UW long: the first
        // and last U vectors kept in registers leave 2 UW free slots;
        // unread keys are [l, r), the left store writes at ls, the right
        // one ends at rs. Free slots: [ls, l) and [r, rs), 2 UW in all
        // before each load; loading U vectors from the end with less room
        // gives both ends at least UW, so each of the U whole vectors
        // stored at ls and the larger keys stored below rs overwrite only
        // keys already read.
        //
        // SAFETY (every load and store): all indices lie in [lo, hi) ⊆
        // [0, n), by the invariant above.
        let load = |i: usize| -> [__m512i; U] {
            std::array::from_fn(|j| unsafe { _mm512_loadu_si512(p.add(i + j * W).cast()) })
        };
        let (first, last) = (load(lo), load(hi - UW));
        let (mut ls, mut rs) = (lo, hi);
        let (mut l, mut r) = (lo + UW, hi - UW);
        let put = |vs: [__m512i; U], ls: &mut usize, rs: &mut usize| {
            for v in vs {
                let ge = _mm512_cmpge_epu32_mask(v, pv);
                let c = ge.count_ones() as usize;
                unsafe {
                    _mm512_storeu_si512(p.add(*ls).cast(), _mm512_maskz_compress_epi32(!ge, v));
                    let low = ((1u32 << c) - 1) as u16;
                    _mm512_mask_storeu_epi32(p.add(*rs - c).cast(), low, _mm512_maskz_compress_epi32(ge, v));
                }
                *ls += W - c;
                *rs -= c;
            }
        };
        while l < r {
            let vs = if rs - r < l - ls {
                r -= UW;
                load(r)
            } else {
                l += UW;
                load(l - UW)
            };
            put(vs, &mut ls, &mut rs);
        }
        put(first, &mut ls, &mut rs);
        put(last, &mut ls, &mut rs);
        debug_assert_eq!(ls, rs);
        ls
    }

    /// Compare-exchange of each lane with the lane `partner` holds: the
    /// larger key goes to the lanes of `high`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn exchange(v: __m512i, partner: __m512i, high: u16) -> __m512i {
        _mm512_mask_blend_epi32(high, _mm512_min_epu32(v, partner), _mm512_max_epu32(v, partner))
    }

    /// Sorts the 16 keys of a vector: bitonic merges of 1, 2, 4 and 8.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn sort16(v: __m512i) -> __m512i {
        // SAFETY: the index arrays hold 16 lanes.
        let rev8: __m512i = unsafe {
            _mm512_loadu_si512([7u32, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8].as_ptr().cast())
        };
        let v = exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA);
        let v = exchange(v, _mm512_shuffle_epi32::<0b00_01_10_11>(v), 0xCCCC);
        let v = exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA);
        let v = exchange(v, _mm512_permutexvar_epi32(rev8, v), 0xF0F0);
        let v = exchange(v, _mm512_shuffle_epi32::<0b01_00_11_10>(v), 0xCCCC);
        let v = exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA);
        let v = exchange(v, reverse(v), 0xFF00);
        let v = exchange(v, _mm512_shuffle_i32x4::<0b10_11_00_01>(v, v), 0xF0F0);
        let v = exchange(v, _mm512_shuffle_epi32::<0b01_00_11_10>(v), 0xCCCC);
        exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA)
    }

    /// Sorts at most [`SMALL`] keys in registers.
    #[target_feature(enable = "avx512f")]
    fn sort_small(keys: &mut [u32]) {
        match keys.len().div_ceil(W) {
            0 => {}
            1 => sort_vectors::<1>(keys),
            2 => sort_vectors::<2>(keys),
            3 | 4 => sort_vectors::<4>(keys),
            5..=8 => sort_vectors::<8>(keys),
            _ => sort_vectors::<16>(keys),
        }
    }

    /// Sorts at most `N` × 16 keys: loaded into `N` vectors (padded with
    /// u32::MAX, which sorts last), each sorted, then sorted blocks of 1,
    /// 2, 4 … vectors merged pairwise; the first `keys.len()` stored back.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sort_vectors<const N: usize>(keys: &mut [u32]) {
        let n = keys.len();
        debug_assert!(n <= N * W);
        let max = _mm512_set1_epi32(-1);
        let mask = |i: usize| -> u16 {
            let k = n.saturating_sub(i * W).min(W);
            ((1u32 << k) - 1) as u16
        };
        let mut v = [max; N];
        for (i, x) in v.iter_mut().enumerate() {
            // SAFETY: the mask covers only keys of the slice.
            *x = sort16(unsafe { _mm512_mask_loadu_epi32(max, mask(i), keys.as_ptr().add(i * W).cast()) });
        }
        let mut w = 1;
        while w < N {
            for block in v.chunks_exact_mut(2 * w) {
                merge_blocks(block, w);
            }
            w *= 2;
        }
        for (i, x) in v.iter().enumerate() {
            // SAFETY: the mask covers only keys of the slice.
            unsafe { _mm512_mask_storeu_epi32(keys.as_mut_ptr().add(i * W).cast(), mask(i), *x) };
        }
    }

    /// Merges two sorted blocks of `w` vectors (`block` = A then B) into
    /// one: A against B reversed gives a low and a high bitonic half
    /// (every key of the low ≤ every key of the high), each sorted by
    /// half-cleaners between vectors `w/2 … 1` apart, then in each vector.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn merge_blocks(block: &mut [__m512i], w: usize) {
        let mut high = [_mm512_setzero_si512(); 8];
        for i in 0..w {
            let (a, b) = (block[i], reverse(block[2 * w - 1 - i]));
            block[i] = _mm512_min_epu32(a, b);
            high[i] = _mm512_max_epu32(a, b);
        }
        block[w..].copy_from_slice(&high[..w]);
        for half in block.chunks_exact_mut(w) {
            let mut d = w / 2;
            while d > 0 {
                for j in 0..w {
                    if j & d == 0 {
                        let (x, y) = (half[j], half[j + d]);
                        half[j] = _mm512_min_epu32(x, y);
                        half[j + d] = _mm512_max_epu32(x, y);
                    }
                }
                d /= 2;
            }
            for x in half.iter_mut() {
                *x = clean(*x);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(mut keys: Vec<u32>, flip: u32) {
        let mut want = keys.clone();
        want.sort_unstable_by_key(|&x| x ^ flip);
        sort(&mut keys, flip);
        assert!(keys == want, "{} keys, flip {flip:#x}", want.len());
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
